import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/** Connections a script runs on: a single Redis or a Redis Cluster (routed by the first key). */
export type ScriptConnection = Redis | Cluster;

const isNoScript = (error: unknown): boolean =>
  error instanceof Error && error.message.startsWith('NOSCRIPT');

/**
 * A Lua script sent by its SHA-1 (`EVALSHA`), and in full (`EVAL`) only when the server does not
 * know it yet (`NOSCRIPT`: a new or restarted Redis, a failover, a `SCRIPT FLUSH`). A script of
 * several kilobytes sent with every message costs more than its own work: this keeps the request
 * to the keys and arguments.
 */
export class LuaScript {
  readonly source: string;
  readonly sha: string;

  constructor(source: string) {
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Runs the script with `keys` (all of one slot) and `args`; answers what the script returns. */
  async run(
    redis: ScriptConnection,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
