import { z } from 'zod';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { ResultEventSchema, type ResultEvent } from '../interface/result-event.ts';

/**
 * A result event as it rests in Redis while it waits for the webhook or sits in a dead letter:
 * `patient_id` is replaced by `patient_id_sealed`, sealed with the crosswalk keys and bound to
 * the event id ({@link storedEventContext}). Opened just before it is sent or replayed.
 */
export const StoredEventSchema = ResultEventSchema.omit({ patient_id: true }).extend({
  patient_id_sealed: z.string().min(1).nullable(),
});
export type StoredEvent = z.infer<typeof StoredEventSchema>;

/** The associated data a stored event's `patient_id` is sealed with. */
export const storedEventContext = (eventId: string): string => `evt:${eventId}`;

export function sealStoredEvent(event: ResultEvent, keys: CrosswalkKeys): StoredEvent {
  const { patient_id: patientId, ...rest } = ResultEventSchema.parse(event);
  return {
    ...rest,
    patient_id_sealed:
      patientId === null ? null : keys.seal(patientId, storedEventContext(event.id)),
  };
}

export function openStoredEvent(stored: unknown, keys: CrosswalkKeys): ResultEvent {
  // Written by a version before sealing (plain `patient_id`): still delivered, never lost;
  // `keys rotate` or its delivery replaces it.
  if (typeof stored === 'object' && stored !== null && !('patient_id_sealed' in stored)) {
    return ResultEventSchema.parse(stored);
  }
  const { patient_id_sealed: sealed, ...rest } = StoredEventSchema.parse(stored);
  return {
    ...rest,
    patient_id:
      sealed === null ? null : keys.open(sealed, storedEventContext(rest.id)).toString('utf8'),
  };
}

/**
 * Opens with `from`, seals again with `to` (key rotation; a plain event of an earlier version is
 * sealed); throws when `from` does not open it.
 */
export function resealStoredEvent(
  stored: unknown,
  from: CrosswalkKeys,
  to: CrosswalkKeys,
): StoredEvent {
  return sealStoredEvent(openStoredEvent(stored, from), to);
}
