import type { RedisClient } from '../../src/queues/redis-client.ts';

/** Where a planted failure strikes relative to its command. */
export type FaultMode =
  /** The command never reaches Redis (the connection dropped before it). */
  | 'before'
  /** Redis carries the command out, but its reply is lost (the connection dropped after it). */
  | 'after';

/** A socket-level error of the kind a dropped Redis connection gives (ECONNRESET). */
function connectionReset(): Error {
  return Object.assign(new Error('planted fault: connection reset'), { code: 'ECONNRESET' });
}

/**
 * A view of an ioredis client whose Redis commands are counted and of which one can be made to
 * fail: {@link FaultyRedis.arm} picks the n-th command from now and whether it fails before or
 * after Redis carried it out. Everything else is the real client, talking to the real Redis; the
 * failure is the one a lost connection gives at that point, so that a test can drop the
 * connection between any two steps of the code under test.
 */
export class FaultyRedis {
  readonly client: RedisClient;
  #count = 0;
  #armed: { at: number; mode: FaultMode } | undefined;
  #fired = false;

  constructor(target: RedisClient) {
    const commands = new Set([...target.getBuiltinCommands(), 'eval', 'evalsha']);
    // The project's scripts are defined on the client as commands of their own (LuaScript).
    const scripts = (target as unknown as { scriptsSet: Record<string, unknown> }).scriptsSet;
    this.client = new Proxy(target, {
      get: (object, property, receiver) => {
        const value: unknown = Reflect.get(object, property, receiver);
        if (
          typeof property !== 'string' ||
          !(commands.has(property) || Object.hasOwn(scripts, property)) ||
          typeof value !== 'function'
        ) {
          return value;
        }
        return (...args: unknown[]) => this.#call(() => value.apply(object, args) as unknown);
      },
    });
  }

  /** Commands sent through {@link client} since the last {@link reset}. */
  get count(): number {
    return this.#count;
  }

  /** True once the armed failure struck. */
  get fired(): boolean {
    return this.#fired;
  }

  /** Counts from zero again, with no failure armed. */
  reset(): void {
    this.#count = 0;
    this.#armed = undefined;
    this.#fired = false;
  }

  /** Fails the `n`-th command (1-based) from now on, `before` or `after` Redis carries it out. */
  arm(n: number, mode: FaultMode): void {
    this.reset();
    this.#armed = { at: n, mode };
  }

  async #call(run: () => unknown): Promise<unknown> {
    this.#count += 1;
    const armed = this.#armed;
    if (armed === undefined || armed.at !== this.#count) return run();
    this.#armed = undefined;
    this.#fired = true;
    if (armed.mode === 'before') throw connectionReset();
    await run();
    throw connectionReset();
  }
}
