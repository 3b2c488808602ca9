import { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import { KeptResults } from '../cds/kept-results.ts';
import { optOutKey } from '../privacy/patient-consent.ts';
import type { Config } from '../config/config-schema.ts';
import { purgePatientDeliveries } from '../delivery/purge-patient-deliveries.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import type { Logger } from '../observability/logger.ts';
import { PatientAdmin } from '../privacy/patient-admin.ts';
import type { PatientEraser } from '../privacy/patient-eraser.ts';
import { QueueJobEraser } from '../privacy/queue-job-eraser.ts';
import { Partitions } from '../queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';
import { DemographicsWait } from '../records/demographics-wait.ts';

/**
 * The stores beyond the core ones that hold a patient's data and forget it on a purge: result
 * events waiting for the webhook, dead letters, and events waiting in the outbound queue (when it
 * is on). `queues` are the queues opened for them.
 */
export function patientErasers(
  config: Config,
  redis: RedisClient,
  keys: CrosswalkKeys,
): { erasers: PatientEraser[]; queues: Queue[] } {
  const prefix = config.redis.prefix;
  const partitions = Partitions.of(config.redis);
  const erasers: PatientEraser[] = [
    {
      // Result events waiting for the webhook, and dead letters (their patient_id is sealed).
      name: 'webhook_events',
      async erase(patientServiceId) {
        const purged = await purgePatientDeliveries(
          { redis, prefix: partitions, keys },
          patientServiceId,
        );
        return purged.pending + purged.deadLetters;
      },
    },
    // Queries of the patient waiting for a birth date.
    new DemographicsWait({ redis, prefix: partitions }),
    // The results kept for the CDS Hooks service (whether or not it is on now).
    keptResultsOf(config, redis, keys),
  ];
  const queues: Queue[] = [];
  const outbound = config.delivery.outbound_queue;
  if (outbound.enabled) {
    const queue = new Queue(outbound.name, { connection: redis, prefix });
    // Its errors are the shared connection's, which the process's outage log reports once per
    // state change; without a listener ioredis would print each one raw.
    queue.on('error', () => undefined);
    queues.push(queue);
    erasers.push(new QueueJobEraser('outbound_events', queue, redis));
  }
  return { erasers, queues };
}

/**
 * The results kept for the CDS Hooks service (docs/cds-hooks.md) on `redis`: sealed with the
 * crosswalk keys, expiring with `privacy.record_retention_days`, none read for an opted-out
 * patient. What the delivery router keeps, the CDS Hooks routes read, and purge and opt-out erase.
 */
export function keptResultsOf(
  config: Pick<Config, 'redis' | 'privacy'>,
  redis: RedisClient,
  keys: CrosswalkKeys,
): KeptResults {
  return new KeptResults({
    redis,
    prefix: Partitions.of(config.redis),
    keys,
    retentionDays: config.privacy.record_retention_days,
    optOutKeyOf: optOutKey,
  });
}

/**
 * Patient administration as the ingest process and the CLI build it: one place, so that both
 * purge exactly the same stores. `queues` are the query queues of every partition (index =
 * partition); without them they are opened on `redis`. `close()` closes what this opened.
 */
export function patientAdminFor(options: {
  config: Config;
  redis: RedisClient;
  keys: CrosswalkKeys;
  logger: Logger;
  queues?: readonly Queue[];
}): { admin: PatientAdmin; close(): Promise<void> } {
  const { config, redis, keys, logger } = options;
  const { erasers, queues } = patientErasers(config, redis, keys);
  const partitions = Partitions.of(config.redis);
  let queryQueues = options.queues;
  if (queryQueues === undefined) {
    queryQueues = partitions.prefixes.map((prefix) => {
      const queue = new Queue(CONCORDANCE_QUERIES, { connection: redis, prefix });
      queue.on('error', () => undefined);
      queues.push(queue);
      return queue;
    });
  }
  const admin = new PatientAdmin({
    redis,
    prefix: partitions,
    keys,
    queue: queryQueues,
    logger,
    auditMaxEntries: config.admin.audit.max_entries,
    erasers,
    optOutErasers: [keptResultsOf(config, redis, keys)],
  });
  return {
    admin,
    async close() {
      for (const opened of queues) await opened.close();
    },
  };
}
