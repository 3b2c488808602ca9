import type { Config } from '../config/config-schema.ts';
import type { Partitions } from '../queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { WEBHOOK_DELIVERIES } from './webhook-deliveries-queue.ts';

/** A BullMQ queue of the deployment: its name and the partition whose prefix it lives under. */
export interface DeploymentQueue {
  name: string;
  /** The outbound queue is partition 0's (the configured prefix). */
  partition: number;
}

async function exists(redis: RedisClient, prefix: string, name: string): Promise<boolean> {
  const base = `${prefix}:${name}`;
  return (await redis.exists(`${base}:meta`, `${base}:id`)) > 0;
}

/**
 * The queues this configuration uses: the query queue of every partition, the outbound queue
 * (one) when it is on or present, the webhook's of every partition when it is configured or
 * present (a process of another role may not be configured with it). What `status` and the queue
 * view list.
 */
export async function deploymentQueues(
  config: Pick<Config, 'delivery'>,
  redis: RedisClient,
  partitions: Partitions,
): Promise<DeploymentQueue[]> {
  const each = (name: string) => partitions.prefixes.map((_, partition) => ({ name, partition }));
  const queues = each(CONCORDANCE_QUERIES);
  if (
    config.delivery.outbound_queue.enabled ||
    (await exists(redis, partitions.base, config.delivery.outbound_queue.name))
  ) {
    queues.push({ name: config.delivery.outbound_queue.name, partition: 0 });
  }
  if (
    config.delivery.webhook.url !== null ||
    (await exists(redis, partitions.base, WEBHOOK_DELIVERIES))
  ) {
    queues.push(...each(WEBHOOK_DELIVERIES));
  }
  return queues;
}
