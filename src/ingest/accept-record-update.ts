import { randomUUID } from 'node:crypto';
import type { Crosswalk, CrosswalkPlan } from '../identity/crosswalk.ts';
import { categoriesFromRules, type PresetRule } from '../presets/rules.ts';
import type { ScheduledQuery } from '../queries/query-scheduler.ts';
import type { RecordStore } from '../records/record-store.ts';
import { RequestValidationError } from './errors/request-validation-error.ts';
import { CommitConflictError } from './errors/commit-conflict-error.ts';
import type { RecordUpdateBody } from './schemas/record-update-body.ts';
import type { UpdateCommitter } from './update-committer.ts';

export interface RecordUpdateDeps {
  crosswalk: Crosswalk;
  records: RecordStore;
  committer: UpdateCommitter;
  /** `config.presets.rules`: presets of every patient. */
  rules: readonly PresetRule[];
}

/** The 202 answer. */
export interface AcceptedAnswer {
  event_id: string;
  patient_service_id: string;
  queries: ScheduledQuery[];
}

/** The 200 answer to an event id seen within the idempotency window. */
export interface DuplicateAnswer {
  duplicate: true;
  event_id: string;
}

export type RecordUpdateResult =
  | { outcome: 'accepted'; answer: AcceptedAnswer }
  | { outcome: 'duplicate'; answer: DuplicateAnswer };

const recordMissing = () =>
  new RequestValidationError([
    {
      loc: ['body', 'assembled_patient'],
      msg: 'no record is known for this patient: send assembled_patient',
      type: 'record_missing',
    },
  ]);

/** A commit that lost a race (another writer created the patient) is retried this many times. */
const MAX_ATTEMPTS = 5;

/**
 * Applies one validated record update in one Redis script (see UpdateCommitter): the crosswalk
 * entry of a new patient, the record, one query per preset category, and the sender's event id
 * (remembered per patient) all become durable together or not at all, so that the 202 always means
 * the queries will run, and a resend after a failure finds nothing half done.
 */
export async function acceptRecordUpdate(
  deps: RecordUpdateDeps,
  body: RecordUpdateBody,
  now = new Date(),
): Promise<RecordUpdateResult> {
  const eventId = body.event_id ?? randomUUID();
  const extraCategories = [
    ...new Set([...categoriesFromRules(deps.rules, body.changes), ...(body.ccsr_categories ?? [])]),
  ];
  for (let attempt = 1; ; attempt++) {
    // A local id retired by an HL7 merge stands for its survivor, whatever the feed.
    const existing = await deps.crosswalk.findCurrent(body.patient_id);
    // Queries run on the stored record: without one there is nothing to evaluate, and nothing
    // (not even a crosswalk entry) is created.
    if (existing === undefined && body.assembled_patient === undefined) throw recordMissing();
    const newPatient = existing === undefined ? deps.crosswalk.plan(body.patient_id) : undefined;
    const patientServiceId = existing ?? (newPatient as CrosswalkPlan).patientServiceId;
    const result = await deps.committer.commit({
      patientServiceId,
      ...(newPatient === undefined ? {} : { newPatient }),
      record:
        body.assembled_patient === undefined
          ? { kind: 'keep' }
          : {
              kind: 'put',
              sealed: deps.records.sealRecord(patientServiceId, body.assembled_patient),
              contentHmac: deps.records.contentHmac(patientServiceId, body.assembled_patient),
            },
      eventId,
      now,
      extraCategories,
      // An id we generated cannot come back: only the sender's own ids are worth remembering.
      remember: body.event_id !== undefined,
    });
    switch (result.status) {
      case 'unchanged':
        // The same record again, its queries already opened: accepted, nothing to run.
        return {
          outcome: 'accepted',
          answer: { event_id: eventId, patient_service_id: patientServiceId, queries: [] },
        };
      case 'ok':
        return {
          outcome: 'accepted',
          answer: {
            event_id: eventId,
            patient_service_id: patientServiceId,
            queries: result.queries,
          },
        };
      case 'duplicate':
        return { outcome: 'duplicate', answer: { duplicate: true, event_id: eventId } };
      case 'missing':
        throw recordMissing();
      case 'conflict':
        if (attempt >= MAX_ATTEMPTS) throw new CommitConflictError(attempt);
    }
  }
}
