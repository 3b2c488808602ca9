import { randomUUID } from 'node:crypto';
import type { Crosswalk } from '../identity/crosswalk.ts';
import type { PresetStore } from '../presets/preset-store.ts';
import { categoriesFromRules, type PresetRule } from '../presets/rules.ts';
import type { QueryScheduler, ScheduledQuery } from '../queries/query-scheduler.ts';
import type { RecordStore } from '../records/record-store.ts';
import { RequestValidationError } from './errors/request-validation-error.ts';
import type { IdempotencyStore } from './idempotency-store.ts';
import type { RecordUpdateBody } from './schemas/record-update-body.ts';

export interface RecordUpdateDeps {
  crosswalk: Crosswalk;
  records: RecordStore;
  presets: PresetStore;
  scheduler: QueryScheduler;
  idempotency: IdempotencyStore;
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

/**
 * Applies one validated record update: the record, then one query per preset category. Each step
 * is awaited in Redis before the next, and the event id is remembered last, so that an update
 * interrupted anywhere is not remembered and the sender's retry redoes it (every step is
 * idempotent or coalesces: the crosswalk resolves to the same id, a second record put is the same
 * record, a second schedule joins the open query).
 */
export async function acceptRecordUpdate(
  deps: RecordUpdateDeps,
  body: RecordUpdateBody,
  now = new Date(),
): Promise<RecordUpdateResult> {
  const eventId = body.event_id ?? randomUUID();
  if (body.event_id !== undefined && (await deps.idempotency.find(eventId)) !== undefined) {
    return { outcome: 'duplicate', answer: { duplicate: true, event_id: eventId } };
  }

  const { patientServiceId } = await deps.crosswalk.resolve(body.patient_id);
  if (body.assembled_patient !== undefined) {
    await deps.records.put(patientServiceId, body.assembled_patient, now);
  } else if ((await deps.records.version(patientServiceId)) === 0) {
    // Queries run on the stored record: without one there is nothing to evaluate.
    throw new RequestValidationError([
      {
        loc: ['body', 'assembled_patient'],
        msg: 'no record is known for this patient: send assembled_patient',
        type: 'record_missing',
      },
    ]);
  }

  const registered = (await deps.presets.list(patientServiceId)).map((p) => p.ccsr_category);
  const categories = new Set([
    ...registered,
    ...categoriesFromRules(deps.rules, body.changes),
    ...(body.ccsr_categories ?? []),
  ]);
  const trigger = { eventId, at: now.toISOString() };
  const queries = await Promise.all(
    [...categories].map((category) => deps.scheduler.schedule(patientServiceId, category, trigger)),
  );

  const answer: AcceptedAnswer = {
    event_id: eventId,
    patient_service_id: patientServiceId,
    queries,
  };
  // An id we generated cannot come back: only the sender's own ids are worth remembering.
  if (body.event_id !== undefined) await deps.idempotency.remember(eventId, answer);
  return { outcome: 'accepted', answer };
}
