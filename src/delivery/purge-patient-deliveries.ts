import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import { globLiteral, scanEach, type RedisClient } from '../queues/redis-client.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { DeadLetterStore } from './dead-letter-store.ts';
import { WebhookDeliveryStore } from './webhook-delivery-store.ts';

/** What {@link purgePatientDeliveries} removed. */
export interface PurgedDeliveries {
  /** Result events that were still waiting for the webhook. */
  pending: number;
  deadLetters: number;
  /** Whether the change detector's last result of one of the patient's keys was removed. */
  lastResults: number;
}

/**
 * Removes what the delivery side holds about a patient: events waiting for the webhook, dead
 * letters, and the change detector's last result per category. Events already handed to the
 * outbound queue belong to the hospital's consumer and are left alone.
 */
export async function purgePatientDeliveries(
  { redis, prefix: space, keys }: { redis: RedisClient; prefix: KeySpace; keys: CrosswalkKeys },
  patientServiceId: string,
): Promise<PurgedDeliveries> {
  // A patient's lines, letters and last results are in its partition.
  const prefix = patientPrefix(space, patientServiceId);
  const pending = await new WebhookDeliveryStore({ redis, prefix, keys }).purgePatient(
    patientServiceId,
  );
  const deadLetters = await new DeadLetterStore({ redis, prefix, keys }).purgePatient(
    patientServiceId,
  );
  let lastResults = 0;
  const pattern = `${globLiteral(prefix)}:delivery:last:${globLiteral(patientServiceId)}/*`;
  for await (const found of scanEach(redis, pattern, { count: 500 })) {
    lastResults += await redis.unlink(...found);
  }
  return { pending, deadLetters, lastResults };
}
