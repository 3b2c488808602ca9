import { randomUUID } from 'node:crypto';
import { LuaScript } from '../queues/lua-script.ts';
import { setTimeout as delay } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Logger } from 'pino';
import { queryJobId, type QueryJobData } from './query-job.ts';
import { parseOutboxMember, queryOutboxKey } from './query-outbox.ts';

/**
 * Leases up to ARGV[2] due members (score <= ARGV[1]) by moving their score to ARGV[3]: a worker
 * that dies before it has queued them leaves them to come due again when the lease runs out.
 */
const LEASE = new LuaScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], 'XX', ARGV[3], member) end
return due
`);

export interface QueryDispatcherOptions {
  /** A worker connection (commands wait while Redis is away). */
  redis: RedisClient;
  prefix: string;
  /** The query queue the due queries become jobs of. */
  queue: Queue;
  logger: Logger;
  /** @defaultValue 100 */
  intervalMs?: number;
  /** @defaultValue 500 */
  batchSize?: number;
  /** @defaultValue 30000 */
  leaseMs?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * Turns due queries (the due set that ingest writes, see query-outbox.ts) into query jobs. Each
 * pass leases what is due, adds one job per query in one bulk add — the job id is the query's own
 * (`q-…-seq`), so a query leased twice after a crash is still one job — and only then removes the
 * members. Nothing is lost when a worker dies in between: the lease expires and another worker
 * (or this one, restarted) queues the query.
 */
export class QueryDispatcher {
  readonly #o: Required<Omit<QueryDispatcherOptions, 'now'>> & { now: () => number };
  readonly #key: string;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #failing = false;

  constructor(options: QueryDispatcherOptions) {
    this.#o = {
      intervalMs: 100,
      batchSize: 500,
      leaseMs: 30_000,
      now: Date.now,
      ...options,
    };
    this.#key = queryOutboxKey(options.prefix);
  }

  /** One pass: queues up to one batch of due queries; returns how many. */
  async dispatchDue(): Promise<number> {
    const now = this.#o.now();
    const members = (await LEASE.run(
      this.#o.redis,
      [this.#key],
      [now, this.#o.batchSize, now + this.#o.leaseMs],
    )) as string[];
    if (members.length === 0) return 0;
    const jobs = [];
    for (const member of members) {
      const due = parseOutboxMember(member);
      if (due === undefined) continue;
      const data: QueryJobData = {
        queryId: randomUUID(),
        ...due,
        step: 'scheduled',
        polls: 0,
        resubmits: 0,
      };
      jobs.push({
        name: 'query',
        data,
        opts: { jobId: queryJobId(due.patientServiceId, due.ccsrCategory, due.seq) },
      });
    }
    if (jobs.length > 0) await this.#o.queue.addBulk(jobs);
    await this.#o.redis.zrem(this.#key, ...members);
    return members.length;
  }

  /** Runs passes every `intervalMs` (at once again while batches come back full). */
  start(): void {
    const tick = () => {
      if (this.#stopped) return;
      this.#running = this.#pass().finally(() => {
        this.#running = undefined;
      });
    };
    this.#timer = setInterval(() => {
      if (this.#running === undefined) tick();
    }, this.#o.intervalMs);
    this.#timer.unref();
    tick();
  }

  async #pass(): Promise<void> {
    try {
      while (!this.#stopped && (await this.dispatchDue()) >= this.#o.batchSize);
      if (this.#failing) {
        this.#failing = false;
        this.#o.logger.info('due queries are being queued again');
      }
    } catch (err) {
      if (!this.#failing) {
        this.#failing = true;
        this.#o.logger.warn(
          { err: { name: (err as Error).name, message: (err as Error).message } },
          'due queries could not be queued; trying again',
        );
      }
    }
  }

  /**
   * Stops after the pass under way, waiting at most `graceMs` for it (a pass waiting for an absent
   * Redis is abandoned: what it leased comes due again when the lease runs out).
   */
  async close(graceMs = 2_000): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    if (this.#running !== undefined) {
      await Promise.race([this.#running, delay(graceMs, undefined, { ref: false })]);
    }
  }
}
