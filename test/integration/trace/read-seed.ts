import { Partitions } from '../../../src/queues/partitions.ts';
import type { RedisClient } from '../../../src/queues/redis-client.ts';
import type { MessageReceipt } from '../../../src/trace/message-trace.ts';
import { isolatedRedis } from '../../support/redis.ts';

/**
 * Writes message trace keys exactly as docs/message-trace.md lays them out, with plain Redis
 * commands (what the writing scripts will do), each with the retention's expiry.
 */
export const TTL_S = 7 * 86_400;

export const T0 = Date.parse('2026-11-20T08:00:00.000Z');

/** A receipt with the usual fields; `over` replaces any. */
export function receipt(over: Partial<MessageReceipt> = {}): MessageReceipt {
  return {
    at: T0,
    feed: 'hl7v2-mllp',
    sender: { application: 'EPIC', facility: 'MAIN' },
    type: 'ADT^A08',
    answer: { code: 'AA', error: null },
    state: 'queued',
    psid: null,
    version: null,
    queries: [],
    trace_id: null,
    ...over,
  };
}

/** A receipt under `controlId`: the list, the patient's index (when it has one) and recent. */
export async function seedReceipt(
  redis: RedisClient,
  prefix: string,
  controlId: string,
  r: MessageReceipt | string,
): Promise<void> {
  const list = `${prefix}:trace:m:${controlId}`;
  const text = typeof r === 'string' ? r : JSON.stringify(r);
  const at = typeof r === 'string' ? T0 : r.at;
  const multi = redis.multi().rpush(list, text).expire(list, TTL_S);
  if (typeof r !== 'string' && r.psid !== null) {
    const index = `${prefix}:trace:p:${r.psid}`;
    multi.zadd(index, at, controlId).expire(index, TTL_S);
  }
  const recent = `${prefix}:trace:recent`;
  multi.zadd(recent, at, controlId).expire(recent, TTL_S);
  await multi.exec();
}

/** A query's steps: `P:trace:q:<psid>:<cat>:<seq>`. */
export async function seedQuery(
  redis: RedisClient,
  prefix: string,
  psid: string,
  category: string,
  seq: number,
  fields: Record<string, string | number>,
): Promise<string> {
  const key = `${prefix}:trace:q:${psid}:${category}:${seq}`;
  await redis.multi().hset(key, fields).expire(key, TTL_S).exec();
  return key;
}

/** A result event's delivery: `P:trace:e:<event id>`. */
export async function seedDelivery(
  redis: RedisClient,
  prefix: string,
  eventId: string,
  fields: Record<string, string | number>,
): Promise<string> {
  const key = `${prefix}:trace:e:${eventId}`;
  await redis.multi().hset(key, fields).expire(key, TTL_S).exec();
  return key;
}

/** A query that went all the way, its result delivered by webhook. */
export function fullQuery(eventId: string, messages = 1): Record<string, string | number> {
  return {
    opened_at: T0,
    feed: 'hl7v2-mllp',
    messages,
    queued_at: T0 + 1_000,
    job_id: 'job-1',
    attempts: 1,
    claimed_at: T0 + 2_000,
    submitted_at: T0 + 3_000,
    remote_job_id: 'remote-1',
    polls: 3,
    last_poll_at: T0 + 9_000,
    ended_at: T0 + 10_000,
    outcome: 'completed',
    event_id: eventId,
  };
}

export const DELIVERED: Record<string, string | number> = {
  webhook_attempts: 2,
  webhook_first_at: T0 + 11_000,
  webhook_last_at: T0 + 12_000,
  webhook_last_answer: '204',
  webhook_state: 'delivered',
  webhook_ended_at: T0 + 12_000,
};

/** Redis under a test prefix of its own, and the two partitions the seeded keys are spread over. */
export async function twoPartitions(): Promise<{
  env: Awaited<ReturnType<typeof isolatedRedis>>;
  partitions: Partitions;
}> {
  const env = await isolatedRedis();
  return { env, partitions: new Partitions(env.prefix, 2) };
}

/** A query of `psid` that went all the way ({@link fullQuery}), its event `eventId` delivered. */
export async function seedDeliveredQuery(
  redis: RedisClient,
  prefix: string,
  psid: string,
  query: { category: string; seq: number; eventId: string; messages?: number },
): Promise<void> {
  await seedQuery(
    redis,
    prefix,
    psid,
    query.category,
    query.seq,
    fullQuery(query.eventId, query.messages),
  );
  await seedDelivery(redis, prefix, query.eventId, DELIVERED);
}

/**
 * A message under `controlId` (a {@link receipt} with `over`, its `psid` set) that opened `query`,
 * and that query gone all the way to its delivered event ({@link seedDeliveredQuery}).
 */
export async function seedMessageWithQuery(
  redis: RedisClient,
  prefix: string,
  controlId: string,
  over: Partial<MessageReceipt> & { psid: string },
  query: { category: string; seq: number; eventId: string },
): Promise<void> {
  const opened = { category: query.category, seq: query.seq, coalesced: false };
  await seedReceipt(redis, prefix, controlId, receipt({ ...over, queries: [opened] }));
  await seedDeliveredQuery(redis, prefix, over.psid, query);
}
