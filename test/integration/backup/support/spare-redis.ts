import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, redisAnswers } from '../../../../tools/local-redis.ts';
import { eventually } from '../../../support/eventually.ts';

/** A `redis-server` of the test's own, in a temporary directory, and how to stop it. */
export interface SpareRedis {
  url: string;
  port: number;
  /** Its working directory (where an AOF or RDB file goes). */
  dir: string;
  stop(): Promise<void>;
}

/**
 * Starts `/usr/bin/redis-server` (found on the PATH) on a free loopback port in a new temporary
 * directory with `args` (e.g. `--appendonly yes`); resolves once it answers PING. `stop` ends it
 * (SIGTERM, waiting for the exit) and removes the directory.
 */
export async function startSpareRedis(args: string[]): Promise<SpareRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cw-spare-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, ...args],
    { stdio: 'ignore' },
  );
  const exited = once(child, 'exit');
  const failed = Promise.race([once(child, 'error'), exited]).then(() => {
    throw new Error('redis-server exited or could not start');
  });
  failed.catch(() => undefined);
  const url = `redis://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.race([
      eventually(
        () => redisAnswers(url),
        (ok) => ok,
        { timeoutMs: 10_000 },
      ),
      failed,
    ]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, port, dir, stop };
}

/** Arguments of a spare Redis that keeps nothing on disk (as the local test Redis). */
export const NO_PERSISTENCE = ['--save', '', '--appendonly', 'no'];
