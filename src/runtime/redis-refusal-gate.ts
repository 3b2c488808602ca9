import { isRedisAuthRefusal, RedisRefusedError } from '../queues/redis-refusal.ts';

/**
 * A role's start-up, cut short when Redis refuses its credentials or permissions: waiting for Redis
 * helps when it is away, never when it says no. {@link refuse} is given each refusal the
 * connections report (see `RedisOutageLog`'s `onRefused`); {@link guard} wraps the start-up, which
 * then rejects with a {@link RedisRefusedError} naming `REDIS_URL` (its password hidden), and the
 * process exits 1. After the start-up a refusal only changes what the outage log says.
 */
export class RedisRefusalGate {
  readonly #url: string;
  readonly #controller = new AbortController();

  constructor(url: string) {
    this.#url = url;
  }

  /** Aborted with the {@link RedisRefusedError} of the first refusal. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  refuse(reply: Error): void {
    if (!this.#controller.signal.aborted) {
      this.#controller.abort(new RedisRefusedError(this.#url, reply));
    }
  }

  /**
   * `startup`, unless a refusal comes first; a refusal that `startup` itself rejects with (a
   * `NOPERM` to one of its commands) becomes a {@link RedisRefusedError} too.
   */
  guard<T>(startup: Promise<T>): Promise<T> {
    const { signal } = this.#controller;
    if (signal.aborted) {
      startup.catch(() => undefined);
      return Promise.reject(signal.reason as Error);
    }
    const refused = new Promise<never>((_resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
    return Promise.race([startup, refused]).catch((err: unknown) => {
      if (err instanceof RedisRefusedError || !isRedisAuthRefusal(err)) throw err;
      throw new RedisRefusedError(this.#url, err as Error);
    });
  }
}
