import type { ChainableCommander } from 'ioredis';
import { LuaScript } from '../queues/lua-script.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import { openStoredEvent, sealStoredEvent } from './stored-event.ts';
import { DeadLetterErrorSchema, type DeadLetterError } from './dead-letter.ts';

/** Hands an event to the webhook once: a second hand-over of the same id changes nothing. */
const ENQUEUE = LuaScript.load(new URL('./lua/enqueue-event.lua', import.meta.url));
/** Puts a dead-lettered event back at the end of its key's line, with a new job id. */
const REQUEUE = LuaScript.load(new URL('./lua/requeue-event.lua', import.meta.url));
/** Starts an attempt, for the job that owns the event when it is first in its key's line. */
const BEGIN = LuaScript.load(new URL('./lua/begin-attempt.lua', import.meta.url));
/** Ends an event's delivery (delivered or dead) and names the next in its key's line. */
const FINISH = LuaScript.load(new URL('./lua/finish-delivery.lua', import.meta.url));
/**
 * Records a failed attempt that will be retried: its error, and the event among the retrying
 * deliveries (only while it is pending).
 */
const RECORD_FAILURE = LuaScript.load(new URL('./lua/record-failure.lua', import.meta.url));
/** Empties one key's line: its waiting events (sealed payloads and state) and the line itself. */
const PURGE_LINE = LuaScript.load(new URL('./lua/purge-line.lua', import.meta.url));

export interface WebhookDeliveryStoreOptions {
  redis: RedisClient;
  prefix: string;
  /** Seal each waiting event's `patient_id` at rest (see `stored-event.ts`). */
  keys: CrosswalkKeys;
  /**
   * How long a delivered event's marker is kept: a hand-over of the same event id within this time
   * makes no second POST. @defaultValue 7 days
   */
  deliveredTtlS?: number;
  /** How long a dead event's marker is kept (its letter holds the event). @defaultValue 30 days */
  deadTtlS?: number;
  /**
   * The message trace's retention, seconds: each attempt, failure and end is noted in the
   * event's delivery trace. @defaultValue 0 (the trace off: nothing written)
   */
  traceTtlS?: number;
}

/** How a delivery ended: the next event of its key's line, and the feed of its query. */
export interface FinishedDelivery {
  next: string | undefined;
  /** From the event's delivery trace (`cw_feed_messages_total`); undefined when none. */
  feed: string | undefined;
}

/** What {@link WebhookDeliveryStore.begin} decided for a job. */
export type AttemptStart =
  | {
      kind: 'go';
      key: string;
      event: ResultEvent;
      enqueuedAt: number;
      attempt: number;
      firstAttemptAt: number;
      /**
       * The `traceparent` the event's delivery trace keeps (its query's submission span): the
       * parent of the attempt's span. Undefined when none (the trace or tracing off).
       */
      traceparent: string | undefined;
    }
  | { kind: 'waiting'; head: string | undefined }
  | { kind: 'missing' | 'delivered' | 'dead' | 'stale' };

/** An event's delivery state as kept, for the recovery sweep and for tests. */
export interface DeliveryState {
  state: 'pending' | 'delivered' | 'dead';
  key: string;
  job: string;
  attempts: number;
  enqueuedAt: number;
  firstAttemptAt: number | undefined;
  lastAttemptAt: number | undefined;
  lastError: DeadLetterError | undefined;
}

/** The (patient_service_id, ccsr_category) whose results must arrive in order. */
export function queryKeyOf(event: Pick<ResultEvent, 'patient_service_id' | 'ccsr_category'>) {
  return `${event.patient_service_id}/${event.ccsr_category}`;
}

/** A failed attempt's answer as the delivery trace notes it: the HTTP status, else the code. */
function answerOf(error: DeadLetterError): string {
  return error.status === null ? error.code : String(error.status);
}

/**
 * The webhook's per-event state and per-key lines in Redis. Each (patient_service_id,
 * ccsr_category) has a line (a sorted set scored by a global sequence, i.e. hand-over order); only
 * the event first in its line is ever sent, and it leaves the line only once delivered or
 * dead-lettered. So an older result can never arrive after a newer one of the same key, however
 * retries, workers and crashes interleave.
 */
export class WebhookDeliveryStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #deliveredTtlS: number;
  readonly #deadTtlS: number;
  readonly #keys: CrosswalkKeys;
  readonly #traceTtlS: number;

  constructor({
    redis,
    prefix,
    keys,
    deliveredTtlS = 7 * 86_400,
    deadTtlS = 30 * 86_400,
    traceTtlS = 0,
  }: WebhookDeliveryStoreOptions) {
    this.#traceTtlS = traceTtlS;
    this.#redis = redis;
    this.#prefix = prefix;
    this.#deliveredTtlS = deliveredTtlS;
    this.#deadTtlS = deadTtlS;
    this.#keys = keys;
    // Staged in a MULTI made from this connection (replay's re-drive; delivered and dead).
    REQUEUE.define(redis);
    FINISH.define(redis);
  }

  #eventKey(id: string): string {
    return `${this.#prefix}:webhook:event:${id}`;
  }

  #lineKey(key: string): string {
    return `${this.#prefix}:webhook:line:${key}`;
  }

  get #seqKey(): string {
    return `${this.#prefix}:webhook:seq`;
  }

  get #keysKey(): string {
    return `${this.#prefix}:webhook:keys`;
  }

  /**
   * The retrying deliveries: a sorted set of the pending events with at least one failed attempt,
   * scored by their first attempt (epoch ms). An event joins it when a failure is recorded and
   * leaves it in the same script that ends its delivery (delivered, dead) or purges its line, so
   * its first member is always the oldest retry, read in one O(log n) command however many wait.
   */
  get #retryingKey(): string {
    return `${this.#prefix}:webhook:retrying`;
  }

  get #failingKey(): string {
    return `${this.#prefix}:webhook:failing`;
  }

  /**
   * Notes that an attempt failed and will be retried: the endpoint may be down. Shared by every
   * worker process, so that whichever sees the next success wakes the deliveries all of them
   * parked in backoff.
   */
  async markFailing(now: number, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#failingKey, String(now), 'PX', Math.max(1, ttlMs));
  }

  /** Whether an attempt failed since the last success. */
  async isFailing(): Promise<boolean> {
    return (await this.#redis.exists(this.#failingKey)) === 1;
  }

  /** Clears the mark after a success; true for the one caller that cleared it. */
  async clearFailing(): Promise<boolean> {
    return (await this.#redis.del(this.#failingKey)) === 1;
  }

  /**
   * About one probe per `intervalMs` across all workers: true for the caller that gets the turn.
   * The turn lasts a little less than the interval, so that the same worker's next tick finds it
   * free (timers fire a little early or late).
   */
  async takeProbeTurn(intervalMs: number): Promise<boolean> {
    const key = `${this.#prefix}:webhook:probe`;
    const ttl = Math.max(1, Math.floor(intervalMs * 0.8));
    return (await this.#redis.set(key, '1', 'PX', ttl, 'NX')) === 'OK';
  }

  /**
   * Puts `event` at the end of its key's line, once. Returns the event's state and the id of the
   * job that delivers it (`new` for a first hand-over).
   */
  async enqueue(event: ResultEvent, now: number): Promise<{ state: string; job: string }> {
    const [keys, args] = this.#lineArgs(event, now);
    const [state, job] = (await ENQUEUE.run(this.#redis, keys, args)) as [string, string];
    return { state, job };
  }

  /**
   * Stages a {@link REQUEUE} in a MULTI (replay removes the dead letter in the same step), made
   * from this store's connection.
   */
  stageRequeue(multi: ChainableCommander, event: ResultEvent, now: number): ChainableCommander {
    const [keys, args] = this.#lineArgs(event, now);
    return REQUEUE.stage(multi, keys, args);
  }

  /** Keys and arguments of the scripts that put an event in its key's line. */
  #lineArgs(event: ResultEvent, now: number): [string[], (string | number)[]] {
    const key = queryKeyOf(event);
    return [
      [this.#eventKey(event.id), this.#lineKey(key), this.#seqKey, this.#keysKey],
      [event.id, key, JSON.stringify(sealStoredEvent(event, this.#keys)), now],
    ];
  }

  async begin(eventId: string, jobId: string, key: string, now: number): Promise<AttemptStart> {
    const reply = (await BEGIN.run(
      this.#redis,
      [this.#eventKey(eventId), this.#lineKey(key)],
      [eventId, jobId, now, this.#prefix, this.#traceTtlS],
    )) as string[];
    const [kind, a, b, c, d, tp] = reply;
    if (kind === 'go') {
      return {
        kind,
        key,
        // Opened only now, just before it is sent.
        event: openStoredEvent(JSON.parse(a ?? ''), this.#keys),
        enqueuedAt: Number(b),
        attempt: Number(c),
        firstAttemptAt: Number(d),
        traceparent: tp === undefined || tp === '' ? undefined : tp,
      };
    }
    if (kind === 'waiting') return { kind, head: a === '' ? undefined : a };
    if (kind === 'delivered' || kind === 'dead' || kind === 'stale') return { kind };
    return { kind: 'missing' };
  }

  /** The key an event belongs to, from its state (undefined once the marker expired). */
  async keyOf(eventId: string): Promise<string | undefined> {
    return (await this.#redis.hget(this.#eventKey(eventId), 'key')) ?? undefined;
  }

  /**
   * Records a failed attempt to be retried: its error, and the event among the retrying deliveries
   * (scored by its first attempt). An event no longer pending (purged meanwhile) is left alone.
   */
  async recordFailure(eventId: string, error: DeadLetterError): Promise<void> {
    await RECORD_FAILURE.run(
      this.#redis,
      [this.#eventKey(eventId), this.#retryingKey],
      [eventId, JSON.stringify(error), this.#prefix, this.#traceTtlS, answerOf(error)],
    );
  }

  /**
   * When the oldest retrying delivery made its first attempt (epoch ms on the workers' clock), or
   * undefined when no pending delivery has failed. One `ZRANGE … 0 0 WITHSCORES`: O(log n) in the
   * number of retrying deliveries, never a scan (see `cw_webhook_oldest_retry_seconds`).
   */
  async oldestRetryAt(): Promise<number | undefined> {
    const [, score] = await this.#redis.zrange(this.#retryingKey, '0', '0', 'WITHSCORES');
    return score === undefined ? undefined : Number(score);
  }

  /**
   * Marks the event delivered (`status`: the endpoint's answer, for the trace); returns the next
   * event of its key's line, if any, and the feed of its query.
   */
  async delivered(
    eventId: string,
    key: string,
    now: number,
    status?: number,
  ): Promise<FinishedDelivery> {
    const answer = status === undefined ? '' : String(status);
    return this.#finish(this.#redis.multi(), eventId, key, 'delivered', now, answer);
  }

  /**
   * Marks the event dead, in one MULTI with whatever `stage` adds (the dead letter), so that an
   * event is either still in its line or kept as a letter, never neither nor both.
   */
  async dead(
    eventId: string,
    key: string,
    now: number,
    stage: (multi: ChainableCommander) => ChainableCommander,
    error?: DeadLetterError,
  ): Promise<FinishedDelivery> {
    const answer = error === undefined ? '' : answerOf(error);
    return this.#finish(stage(this.#redis.multi()), eventId, key, 'dead', now, answer);
  }

  async #finish(
    multi: ChainableCommander,
    eventId: string,
    key: string,
    state: 'delivered' | 'dead',
    now: number,
    answer: string,
  ): Promise<FinishedDelivery> {
    const ttlS = state === 'delivered' ? this.#deliveredTtlS : this.#deadTtlS;
    const results = await FINISH.stage(
      multi,
      [this.#eventKey(eventId), this.#lineKey(key), this.#keysKey, this.#retryingKey],
      [eventId, state, now, ttlS, key, this.#prefix, this.#traceTtlS, answer],
    ).exec();
    const last = results?.at(-1);
    if (last === undefined || last[0] !== null) throw last?.[0] ?? new Error('MULTI was discarded');
    const [next, feed] = last[1] as [string, string];
    return {
      next: next === '' ? undefined : next,
      feed: feed === '' ? undefined : feed,
    };
  }

  async state(eventId: string): Promise<DeliveryState | undefined> {
    const h = await this.#redis.hgetall(this.#eventKey(eventId));
    if (h.state === undefined) return undefined;
    const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
    return {
      state: h.state as DeliveryState['state'],
      key: h.key ?? '',
      job: h.job ?? '',
      attempts: Number(h.attempts ?? 0),
      enqueuedAt: Number(h.enqueued_at ?? 0),
      firstAttemptAt: num(h.first_attempt_at),
      lastAttemptAt: num(h.last_attempt_at),
      lastError:
        h.last_error === undefined
          ? undefined
          : DeadLetterErrorSchema.parse(JSON.parse(h.last_error)),
    };
  }

  /** The event first in `key`'s line. */
  async head(key: string): Promise<string | undefined> {
    const [head] = await this.#redis.zrange(this.#lineKey(key), '0', '0');
    return head;
  }

  /** The ids in `key`'s line, first to last. */
  async line(key: string): Promise<string[]> {
    return this.#redis.zrange(this.#lineKey(key), '0', '-1');
  }

  /**
   * Removes every event of a patient still waiting for the webhook (all its categories' lines);
   * returns how many. A delivery job of a removed event finds it missing and ends without sending.
   * Dead letters are kept elsewhere: see `DeadLetterStore.purgePatient`.
   */
  async purgePatient(patientServiceId: string): Promise<number> {
    const lines: string[] = [];
    for await (const key of this.keys()) {
      if (key.startsWith(`${patientServiceId}/`)) lines.push(key);
    }
    let removed = 0;
    for (const key of lines) {
      removed += (await PURGE_LINE.run(
        this.#redis,
        [this.#lineKey(key), this.#keysKey, this.#retryingKey],
        [this.#eventKey(''), key],
      )) as number;
    }
    return removed;
  }

  /** Every key whose line is not empty, in pages (for the recovery sweep). */
  async *keys(): AsyncGenerator<string> {
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.sscan(this.#keysKey, cursor, 'COUNT', 200);
      cursor = next;
      yield* keys;
    } while (cursor !== '0');
  }
}
