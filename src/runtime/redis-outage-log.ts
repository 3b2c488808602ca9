import type { Logger } from '../observability/logger.ts';

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
}

/**
 * One JSON log line per change of Redis's state, instead of the raw multi-line dumps that ioredis
 * and BullMQ print for an `error` nobody listens to: `redis unreachable` (error level) when it goes
 * away, `redis reachable again` (info) when it is back, whatever number of reconnect attempts and
 * queue errors come in between. Every connection, queue and worker is given an `error` listener
 * here; errors that are not about the connection are logged as they come (`queue error`).
 */
export class RedisOutageLog {
  readonly #logger: Logger;
  readonly #timer: NodeJS.Timeout | undefined;
  #down = false;
  #stopped = false;

  constructor({ logger, probe, heartbeatMs = 2_000 }: RedisOutageLogOptions) {
    this.#logger = logger;
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
    return this.#down;
  }

  /** An ioredis connection: its errors mark Redis lost, its `ready` marks it back. */
  watch(connection: Connection): this {
    connection.on('error', (err) => this.#lost({ err: summary(err) }));
    connection.on('ready', () => this.#back());
    return this;
  }

  /** BullMQ queues and workers of `name`: connection errors count as the outage, others are logged. */
  listen(name: string, ...emitters: Emitter[]): this {
    for (const emitter of emitters) {
      emitter.on('error', (err) => {
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
    if (this.#down || this.#stopped) return;
    this.#down = true;
    this.#logger.error(details, 'redis unreachable: waiting for it to come back');
  }

  #back(): void {
    if (!this.#down || this.#stopped) return;
    this.#down = false;
    this.#logger.info('redis reachable again');
  }
}
