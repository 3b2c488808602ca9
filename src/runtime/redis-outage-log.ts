import type { Logger } from '../observability/logger.ts';
import { redactUrlPassword } from '../config/url-redaction.ts';
import { isRedisAuthRefusal } from '../queues/redis-refusal.ts';

/** Anything that emits `error`: a BullMQ Queue or Worker, an ioredis client. */
interface Emitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}
/** An ioredis client: `error` on each failed attempt, `ready` once it serves commands again. */
interface Connection {
  status: string;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** True for errors that only say that Redis cannot be reached (as opposed to a bug). */
export function isConnectionError(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    (typeof code === 'string' && CONNECTION_CODES.has(code)) ||
    /connection is closed|stream isn't writeable|reached the max retries|command timed out|socket timeout/i.test(
      err.message,
    )
  );
}

/** What of an error is logged: never a stack, never a command's arguments. */
const summary = (err: Error) => ({
  name: err.name,
  code: (err as { code?: unknown }).code,
  message: err.message.slice(0, 200),
});

export interface RedisOutageLogOptions {
  logger: Logger;
  /**
   * Answers true when Redis answers (a PING with a timeout): checked every `heartbeatMs`, so that a
   * hung Redis (which raises no error on a connection that waits) is noticed too.
   */
  probe?: () => Promise<boolean>;
  /** @defaultValue 2000 */
  heartbeatMs?: number;
  /**
   * Told of every refusal of our credentials or ACL permissions (`WRONGPASS`, `NOAUTH`, `NOPERM`):
   * a start-up gives up on it (`RedisRefusalGate`).
   */
  onRefused?: (reply: Error) => void;
  /** `REDIS_URL`, named (its password hidden) in the line of a refusal. */
  redisUrl?: string;
}

/**
 * One JSON log line per change of Redis's state, instead of the raw multi-line dumps that ioredis
 * and BullMQ print for an `error` nobody listens to: `redis unreachable` (error level) when it goes
 * away, `redis reachable again` (info) when it is back, whatever number of reconnect attempts and
 * queue errors come in between. Every connection, queue and worker is given an `error` listener
 * here; errors that are not about the connection are logged as they come (`queue error`).
 * A connection whose credentials or permissions Redis refuses is not "unreachable": that is logged
 * once as `redis refused our credentials or permissions` (error level, naming REDIS_URL, never the
 * password) until the connection is ready again. Every refusal, a queue's command refused
 * (`NOPERM`) included, is handed to `onRefused`.
 */
export class RedisOutageLog {
  readonly #logger: Logger;
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #onRefused: ((reply: Error) => void) | undefined;
  readonly #redisUrl: string | undefined;
  #state: 'up' | 'down' | 'refused' = 'up';
  #stopped = false;

  constructor({ logger, probe, heartbeatMs = 2_000, onRefused, redisUrl }: RedisOutageLogOptions) {
    this.#logger = logger;
    this.#onRefused = onRefused;
    this.#redisUrl = redisUrl === undefined ? undefined : redactUrlPassword(redisUrl);
    if (probe !== undefined) {
      this.#timer = setInterval(() => {
        void probe().then(
          (ok) => (ok ? this.#back() : this.#lost({ reason: 'redis does not answer' })),
          () => undefined,
        );
      }, heartbeatMs);
      this.#timer.unref();
    }
  }

  /** True while Redis is known to be unreachable. */
  get down(): boolean {
    return this.#state !== 'up';
  }

  /** An ioredis connection: its errors mark Redis lost, its `ready` marks it back. */
  watch(connection: Connection): this {
    connection.on('error', (err) =>
      isRedisAuthRefusal(err) ? this.#refused(err) : this.#lost({ err: summary(err) }),
    );
    connection.on('ready', () => this.#back());
    return this;
  }

  /** BullMQ queues and workers of `name`: connection errors count as the outage, others are logged. */
  listen(name: string, ...emitters: Emitter[]): this {
    for (const emitter of emitters) {
      emitter.on('error', (err) => {
        // A command refused (NOPERM) on a live connection: the start-up gives up on it; later, it
        // is a queue error like any other (the connection itself is fine).
        if (isRedisAuthRefusal(err) && !this.#stopped) this.#onRefused?.(err);
        if (isConnectionError(err)) this.#lost({ err: summary(err) });
        else this.#logger.warn({ queue: name, err: summary(err) }, 'queue error');
      });
    }
    return this;
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  #lost(details: Record<string, unknown>): void {
    if (this.#state !== 'up' || this.#stopped) return;
    this.#state = 'down';
    this.#logger.error(details, 'redis unreachable: waiting for it to come back');
  }

  /** Redis answers, but refuses the connection: logged once (its reply holds no password). */
  #refused(reply: Error): void {
    if (this.#stopped) return;
    this.#onRefused?.(reply);
    if (this.#state === 'refused') return;
    this.#state = 'refused';
    this.#logger.error(
      { err: summary(reply), variable: 'REDIS_URL', redis_url: this.#redisUrl },
      'redis refused our credentials or permissions: check the user and password of REDIS_URL and its ACL',
    );
  }

  #back(): void {
    if (this.#state === 'up' || this.#stopped) return;
    this.#state = 'up';
    this.#logger.info('redis reachable again');
  }
}
