import type { RedisClient } from '../queues/redis-client.ts';

/**
 * The due set of new queries: one Redis sorted set per prefix whose members name a query
 * (`<patient_service_id>|<ccsr_category>|<seq>`) and whose scores are the times (epoch ms) they
 * become due (the first update's time plus the debounce window).
 *
 * Ingest adds to it in the same script that stores the record and opens the query (see
 * `UpdateCommitter`), so that an acknowledged update always has its query written down; the
 * workers' SubmitScheduler claims what is due (see DueQueries) and submits it. This is the shape
 * of Sidekiq's scheduled set: one sorted set, one script that leases what is due.
 */

/** The key of the due set under `prefix`. */
export function queryOutboxKey(prefix: string): string {
  return `${prefix}:qdue`;
}

/** The key of the coalescing state of one (patient, category), see QueryState. */
export function queryStateKey(prefix: string, patientServiceId: string, category: string): string {
  return `${prefix}:qs:${patientServiceId}:${category}`;
}

export interface DueQuery {
  patientServiceId: string;
  ccsrCategory: string;
  seq: number;
}

export function outboxMember(query: DueQuery): string {
  return `${query.patientServiceId}|${query.ccsrCategory}|${query.seq}`;
}

export function parseOutboxMember(member: string): DueQuery | undefined {
  const [patientServiceId, ccsrCategory, seq, ...rest] = member.split('|');
  const n = Number(seq);
  if (!patientServiceId || !ccsrCategory || rest.length > 0 || !Number.isSafeInteger(n) || n < 1) {
    return undefined;
  }
  return { patientServiceId, ccsrCategory, seq: n };
}

/** The glob pattern that matches exactly `text` (for SCAN/ZSCAN MATCH). */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * Removes a patient's queries from the due set (a purge, an opt-out): they never become jobs.
 * Returns how many were removed.
 */
export async function removeDueQueriesOf(
  redis: RedisClient,
  prefix: string,
  patientServiceId: string,
): Promise<number> {
  return removeMembersOf(redis, queryOutboxKey(prefix), patientServiceId);
}

/**
 * Removes a patient's members (`<patient_service_id>|…`) from a sorted set of queries (the due set
 * of new queries, the due set of polls). Returns how many were removed.
 */
export async function removeMembersOf(
  redis: RedisClient,
  key: string,
  patientServiceId: string,
): Promise<number> {
  const members: string[] = [];
  let cursor = '0';
  do {
    const [next, flat] = await redis.zscan(
      key,
      cursor,
      'MATCH',
      `${globLiteral(patientServiceId)}|*`,
      'COUNT',
      500,
    );
    cursor = next;
    for (let i = 0; i < flat.length; i += 2) members.push(flat[i] as string);
  } while (cursor !== '0');
  return members.length === 0 ? 0 : redis.zrem(key, ...members);
}

/** What a query was triggered by: the newest event ids (capped), their count and time span. */
export interface Triggers {
  eventIds: string[];
  count: number;
  firstAt: string;
  lastAt: string;
}
