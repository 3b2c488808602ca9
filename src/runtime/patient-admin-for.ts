import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config-schema.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import type { Logger } from '../observability/logger.ts';
import { PatientAdmin } from '../privacy/patient-admin.ts';
import type { PatientEraser } from '../privacy/patient-eraser.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';

/**
 * The stores beyond the core ones that hold a patient's data and forget it on a purge. Pending
 * webhook events and dead letters plug in here (`WebhookDeliveryStore.purgePatient`).
 */
export function patientErasers(_config: Config, _redis: Redis): PatientEraser[] {
  return [];
}

/**
 * Patient administration as the ingest process and the CLI build it: one place, so that both
 * purge exactly the same stores. `queue` is the query queue; without it one is opened on `redis`
 * (and `close()` closes it).
 */
export function patientAdminFor(options: {
  config: Config;
  redis: Redis;
  keys: CrosswalkKeys;
  logger: Logger;
  queue?: Queue;
}): { admin: PatientAdmin; close(): Promise<void> } {
  const { config, redis, keys, logger } = options;
  const own = options.queue === undefined;
  const queue =
    options.queue ??
    new Queue(CONCORDANCE_QUERIES, { connection: redis, prefix: config.redis.prefix });
  const admin = new PatientAdmin({
    redis,
    prefix: config.redis.prefix,
    keys,
    queue,
    logger,
    auditMaxEntries: config.admin.audit.max_entries,
    erasers: patientErasers(config, redis),
  });
  return {
    admin,
    async close() {
      if (own) await queue.close();
    },
  };
}
