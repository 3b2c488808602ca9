import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { freePort, redisAnswers, redisServerArgs } from '../../../../tools/local-redis.ts';
import { eventually } from '../../../support/eventually.ts';

/**
 * A `redis-server` of the test's own, on a port that stays the same across `stop()` and `start()`,
 * so that a test can take Redis away from a process and give it back (the shared test Redis is
 * never stopped).
 */
export class PrivateRedis {
  readonly port: number;
  readonly url: string;
  #child: ChildProcess | undefined;

  private constructor(port: number) {
    this.port = port;
    this.url = `redis://127.0.0.1:${port}`;
  }

  static async start(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort());
    await redis.start();
    return redis;
  }

  /** Starts the server unless it runs already (a second one could not bind the port). */
  async start(): Promise<void> {
    const running = this.#child;
    if (running && running.exitCode === null && running.signalCode === null) return;
    const child = spawn('redis-server', redisServerArgs(this.port), { stdio: 'ignore' });
    this.#child = child;
    const failed = once(child, 'error').then(([err]) => {
      throw new Error(`could not start redis-server: ${(err as Error).message}`);
    });
    await Promise.race([
      eventually(
        () => redisAnswers(this.url),
        (ok) => ok,
        { timeoutMs: 10_000 },
      ),
      failed,
    ]);
  }

  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
}
