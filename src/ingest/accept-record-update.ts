import { randomUUID } from 'node:crypto';
import { categoriesFromRules, type PresetRule } from '../presets/rules.ts';
import type { ScheduledQuery } from '../queries/query-scheduler.ts';
import type { RecordStore } from '../records/record-store.ts';
import { RequestValidationError } from './errors/request-validation-error.ts';
import { CommitConflictError } from './errors/commit-conflict-error.ts';
import type { LocatedPatient, PatientLocator } from './patient-locator.ts';
import type { RecordUpdateBody } from './schemas/record-update-body.ts';
import type { CommitInput, UpdateCommitter } from './update-committer.ts';
import type { FeedTrace } from './feed-trace.ts';
import type { ReceiptHead } from '../trace/receipt-head.ts';

export interface RecordUpdateDeps {
  /** Finds each update's patient (cached, verified by the commit). */
  locator: PatientLocator;
  records: RecordStore;
  committer: UpdateCommitter;
  /** `config.presets.rules`: presets of every patient. */
  rules: readonly PresetRule[];
  /** The `json` feed's counters and receipts. @defaultValue none */
  trace?: FeedTrace | undefined;
}

/**
 * The receipt head of one JSON update (control id: its `event_id`, or the one generated and
 * answered), as the commit records it when stored (202).
 */
export function jsonReceiptHead(
  trace: FeedTrace | undefined,
  body: RecordUpdateBody,
  eventId: string,
  at: Date,
): ReceiptHead | undefined {
  return trace?.head(
    {
      controlId: eventId,
      at,
      sender: { application: body.source ?? null, facility: null },
      type: 'record-update',
      traceId: null,
      raw: JSON.stringify(body),
    },
    { code: '202' },
  );
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

/** 422 `record_missing` at `loc` (the single route's `['body', 'assembled_patient']`). */
export const recordMissingItem = (loc: readonly (string | number)[]) => ({
  loc: [...loc],
  msg: 'no record is known for this patient: send assembled_patient',
  type: 'record_missing',
});

const recordMissing = () =>
  new RequestValidationError([recordMissingItem(['body', 'assembled_patient'])]);

/** A commit that lost a race (another writer created the patient) is retried this many times. */
export const MAX_ATTEMPTS = 5;

/** The categories one update runs besides the patient's presets (config rules, explicit). */
export function extraCategoriesOf(rules: readonly PresetRule[], body: RecordUpdateBody): string[] {
  return [
    ...new Set([...categoriesFromRules(rules, body.changes), ...(body.ccsr_categories ?? [])]),
  ];
}

/**
 * The commit of one validated update for the patient `located` names: the record sealed and its
 * content HMAC (when sent), the crosswalk entry of a new patient, the check of a known one.
 */
export function commitInputOf(
  deps: Pick<RecordUpdateDeps, 'records'>,
  body: RecordUpdateBody,
  located: LocatedPatient,
  extra: {
    eventId: string;
    now: Date;
    extraCategories: readonly string[];
    receipt?: ReceiptHead | undefined;
  },
): CommitInput {
  const patientServiceId = located.patientServiceId;
  return {
    patientServiceId,
    ...(located.kind === 'new' ? { newPatient: located.plan } : {}),
    ...(located.kind === 'known' && located.verify !== undefined ? { verify: located.verify } : {}),
    record:
      body.assembled_patient === undefined
        ? { kind: 'keep' }
        : {
            kind: 'put',
            sealed: deps.records.sealRecord(patientServiceId, body.assembled_patient),
            contentHmac: deps.records.contentHmac(patientServiceId, body.assembled_patient),
          },
    eventId: extra.eventId,
    now: extra.now,
    extraCategories: extra.extraCategories,
    // An id we generated cannot come back: only the sender's own ids are worth remembering.
    remember: body.event_id !== undefined,
    receipt: extra.receipt,
  };
}

/**
 * Applies one validated record update in one Redis script (see UpdateCommitter): the crosswalk
 * entry of a new patient, the record, one query per preset category, and the sender's event id
 * (remembered per patient) all become durable together or not at all, so that the 202 always means
 * the queries will run, and a resend after a failure finds nothing half done. A patient seen
 * lately costs no lookup: its service id comes from the locator's cache, and the script checks it
 * before writing (a stale one is looked up again).
 */
export async function acceptRecordUpdate(
  deps: RecordUpdateDeps,
  body: RecordUpdateBody,
  now = new Date(),
): Promise<RecordUpdateResult> {
  const eventId = body.event_id ?? randomUUID();
  const extraCategories = extraCategoriesOf(deps.rules, body);
  const receipt = jsonReceiptHead(deps.trace, body, eventId, now);
  let followMerges = false;
  for (let attempt = 1; ; attempt++) {
    // A local id retired by an HL7 merge stands for its survivor, whatever the feed.
    const located = await deps.locator.locate(body.patient_id, { followMerges });
    // Queries run on the stored record: without one there is nothing to evaluate, and nothing
    // (not even a crosswalk entry) is created.
    if (located.kind === 'new' && body.assembled_patient === undefined) throw recordMissing();
    const result = await deps.committer.commit(
      commitInputOf(deps, body, located, { eventId, now, extraCategories, receipt }),
    );
    const patientServiceId = located.patientServiceId;
    switch (result.status) {
      case 'unchanged':
        deps.locator.confirm(located);
        // The same record again, its queries already opened: accepted, nothing to run.
        return {
          outcome: 'accepted',
          answer: { event_id: eventId, patient_service_id: patientServiceId, queries: [] },
        };
      case 'ok':
        deps.locator.confirm(located);
        deps.trace?.queued(result.queries.length);
        return {
          outcome: 'accepted',
          answer: {
            event_id: eventId,
            patient_service_id: patientServiceId,
            queries: result.queries,
          },
        };
      case 'duplicate':
        deps.locator.confirm(located);
        return { outcome: 'duplicate', answer: { duplicate: true, event_id: eventId } };
      case 'missing':
        throw recordMissing();
      case 'retired':
        followMerges = true;
        deps.locator.forget(located);
        break;
      case 'stale':
      case 'conflict':
        deps.locator.forget(located);
    }
    if (attempt >= MAX_ATTEMPTS) throw new CommitConflictError(attempt);
  }
}
