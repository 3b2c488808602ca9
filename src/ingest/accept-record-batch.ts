import { randomUUID } from 'node:crypto';
import type { ValidationErrorItem } from '../interface/validation-error.ts';
import {
  commitInputOf,
  extraCategoriesOf,
  jsonReceiptHead,
  MAX_ATTEMPTS,
  recordMissingItem,
  type AcceptedAnswer,
  type DuplicateAnswer,
  type RecordUpdateDeps,
} from './accept-record-update.ts';
import { CommitConflictError } from './errors/commit-conflict-error.ts';
import { RequestValidationError } from './errors/request-validation-error.ts';
import type { LocatedPatient } from './patient-locator.ts';
import type { RecordUpdateBody } from './schemas/record-update-body.ts';

/** The 202 answer to a batch: one result per item, in the items' order. */
export interface BatchAnswer {
  /** Items stored (their queries opened or joined, or the same record again). */
  accepted: number;
  /** Items whose `event_id` was seen within the idempotency window: nothing changed for them. */
  duplicates: number;
  /** Each item's answer, as the single route would have given it (202 or 200 body). */
  results: (AcceptedAnswer | DuplicateAnswer)[];
}

/**
 * Applies a validated batch of record updates (`POST /v1/record-updates/batch`): all or nothing
 * as far as the sender can tell, then one durable commit of all.
 *
 * 1. Every item's patient is located (the crosswalk cache, else one lookup per unknown id, side
 *    by side). An item without `assembled_patient` whose patient is unknown, and not created by
 *    an earlier item of the batch, refuses the whole batch (422 `record_missing` naming each such
 *    item): nothing is written.
 * 2. The items are committed by `UpdateCommitter.commitMany`: one script call per partition per
 *    hundred items, each call checking all its items before writing any. Items whose cached
 *    patient turned out outdated, retired by a merge, or created meanwhile by another writer are
 *    located again and committed again (their call wrote nothing).
 * 3. The answer is sent only once every call has answered: every accepted item is durable.
 *
 * One case cannot be all or nothing: a patient whose record disappears (purge, retention) between
 * steps 1 and 2 refuses its call (422 naming the item), while calls already made (another
 * partition, an earlier hundred) stay committed. Resending the corrected batch is safe: event ids
 * already stored answer `duplicate`, and an identical record changes nothing.
 */
export async function acceptRecordBatch(
  deps: RecordUpdateDeps,
  bodies: readonly RecordUpdateBody[],
  now = new Date(),
): Promise<BatchAnswer> {
  const { locator } = deps;
  const eventIds = bodies.map((body) => body.event_id ?? randomUUID());
  const extras = bodies.map((body) => extraCategoriesOf(deps.rules, body));
  // One receipt per item, under its own control id (its event id).
  const receipts = bodies.map((body, i) =>
    jsonReceiptHead(deps.trace, body, eventIds[i] as string, now),
  );
  const localIds = [...new Set(bodies.map((body) => body.patient_id))];
  const located = new Map<string, LocatedPatient>(
    await Promise.all(
      localIds.map(async (id) => [id, await locator.locate(id)] as [string, LocatedPatient]),
    ),
  );
  const where = (body: RecordUpdateBody) => located.get(body.patient_id) as LocatedPatient;

  // Queries run on the stored record: an unknown patient needs one, from this item or an earlier.
  const missing: ValidationErrorItem[] = [];
  const withRecord = new Set<string>();
  bodies.forEach((body, i) => {
    if (body.assembled_patient !== undefined) withRecord.add(body.patient_id);
    else if (where(body).kind === 'new' && !withRecord.has(body.patient_id)) {
      missing.push(recordMissingItem(['body', i, 'assembled_patient']));
    }
  });
  if (missing.length > 0) throw new RequestValidationError(missing);

  const results = new Array<AcceptedAnswer | DuplicateAnswer>(bodies.length);
  const followMerges = new Set<string>();
  let pending = bodies.map((_, i) => i);
  for (let attempt = 1; pending.length > 0; attempt++) {
    if (attempt > MAX_ATTEMPTS) throw new CommitConflictError(MAX_ATTEMPTS);
    const inputs = pending.map((i) => {
      const body = bodies[i] as RecordUpdateBody;
      return commitInputOf(deps, body, where(body), {
        eventId: eventIds[i] as string,
        now,
        extraCategories: extras[i] as string[],
        receipt: receipts[i],
      });
    });
    const answers = await deps.committer.commitMany(inputs);
    const again: number[] = [];
    const relocate = new Set<string>();
    const vanished: ValidationErrorItem[] = [];
    answers.forEach((answer, j) => {
      const i = pending[j] as number;
      const body = bodies[i] as RecordUpdateBody;
      const patient = where(body);
      const eventId = eventIds[i] as string;
      switch (answer.status) {
        case 'ok':
        case 'unchanged':
          locator.confirm(patient);
          if (answer.status === 'ok') deps.trace?.queued(answer.queries.length);
          results[i] = {
            event_id: eventId,
            patient_service_id: patient.patientServiceId,
            queries: answer.status === 'ok' ? answer.queries : [],
          };
          return;
        case 'duplicate':
          locator.confirm(patient);
          results[i] = { duplicate: true, event_id: eventId };
          return;
        case 'missing':
          vanished.push(recordMissingItem(['body', i, 'assembled_patient']));
          return;
        case 'retired':
          followMerges.add(body.patient_id);
          locator.forget(patient);
          relocate.add(body.patient_id);
          break;
        case 'stale':
        case 'conflict':
          locator.forget(patient);
          relocate.add(body.patient_id);
          break;
        case 'skipped':
          break;
      }
      again.push(i);
    });
    if (vanished.length > 0) throw new RequestValidationError(vanished);
    await Promise.all(
      [...relocate].map(async (id) => {
        located.set(id, await locator.locate(id, { followMerges: followMerges.has(id) }));
      }),
    );
    pending = again;
  }
  let duplicates = 0;
  for (const result of results) if ('duplicate' in result) duplicates += 1;
  return { accepted: results.length - duplicates, duplicates, results };
}
