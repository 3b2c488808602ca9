import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort, redisAnswers, redisServerArgs } from '../../tools/local-redis.ts';

/** Everything the bench started, closed in reverse order at the end, on error and on SIGINT. */
export class Cleanup {
  readonly #closers: { name: string; close: () => Promise<unknown> }[] = [];
  #running: Promise<void> | undefined;

  add(name: string, close: () => Promise<unknown>): () => void {
    const entry = { name, close };
    this.#closers.push(entry);
    return () => {
      const index = this.#closers.indexOf(entry);
      if (index >= 0) this.#closers.splice(index, 1);
    };
  }

  /** Closes everything once; a closer that fails is reported and the others still run. */
  run(): Promise<void> {
    this.#running ??= (async () => {
      for (const { name, close } of this.#closers.splice(0).reverse()) {
        try {
          await close();
        } catch (err) {
          process.stderr.write(`bench: closing ${name} failed: ${(err as Error).message}\n`);
        }
      }
    })();
    return this.#running;
  }
}

export { freePort } from '../../tools/local-redis.ts';

/** Resident set size of a process now and at its peak (bytes), from /proc. */
export function processMemory(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kib('VmRSS') * 1024, peak: kib('VmHWM') * 1024 };
  } catch {
    return undefined;
  }
}

/**
 * CPU time a process has used so far (user + system, milliseconds), from /proc/PID/stat; the
 * kernel counts it in clock ticks (100 per second on Linux), so the figure moves in 10 ms steps.
 */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count from its closing parenthesis. utime and
    // stime are fields 14 and 15, the 12th and 13th after the name.
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * The CPU time (milliseconds, see {@link processCpuMs}) a process uses from now on: `used()` is
 * the difference since the meter was made, null when /proc cannot be read.
 */
export function cpuMeter(pid: number | undefined): { used(): number | null } {
  const start = processCpuMs(pid);
  return {
    used() {
      const end = processCpuMs(pid);
      return start === undefined || end === undefined ? null : end - start;
    },
  };
}

/** A child process whose recent output lines are kept for error reports. */
export class ChildProc {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  readonly #listeners: ((line: string) => void)[] = [];
  readonly name: string;

  constructor(name: string, command: string, args: string[], env: Record<string, string>) {
    this.name = name;
    this.child = spawn(command, args, {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        // e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the bench's children.
        ...(process.env.BENCH_CHILD_NODE_OPTIONS === undefined
          ? {}
          : { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS }),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = once(this.child, 'exit').then(([code]) => code as number | null);
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.#add(line));
    }
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`${this.name} has no pid`);
    return this.child.pid;
  }

  #add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > 200) this.lines.shift();
    for (const listener of this.#listeners) listener(line);
  }

  onLine(listener: (line: string) => void): void {
    this.#listeners.push(listener);
  }

  /** The last lines it printed, for an error message. */
  tail(count = 20): string {
    return this.lines.slice(-count).join('\n');
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

/** Starts `concordance-worker <args>` from the source tree as a child process. */
export function cliProcess(name: string, args: string[], env: Record<string, string>): ChildProc {
  return new ChildProc(name, process.execPath, [MAIN, ...args], env);
}

/** Resolves once `url` answers 2xx; rejects when the process exits first or after `timeoutMs`. */
export async function waitForHttp(url: string, proc: ChildProc, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!proc.running)
      throw new Error(`${proc.name} exited before ${url} answered:\n${proc.tail()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await response.body?.cancel();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${proc.tail()}`);
}

/** Resolves with the first line containing `text` the process prints from now on. */
export function waitForLine(proc: ChildProc, text: string, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${proc.name} did not print "${text}" in time:\n${proc.tail()}`)),
      timeoutMs,
    );
    const seen = proc.lines.find((l) => l.includes(text));
    if (seen !== undefined) {
      clearTimeout(timer);
      resolve(seen);
      return;
    }
    proc.onLine((line) => {
      if (line.includes(text)) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    void proc.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${proc.name} exited (${code}) before "${text}":\n${proc.tail()}`));
    });
  });
}

/** The Redis the bench runs against. */
export interface BenchRedis {
  url: string;
  /** `private redis-server` (accurate INFO memory, flushed between scenarios) or `REDIS_URL`. */
  origin: 'private redis-server' | 'REDIS_URL (shared)';
  private: boolean;
  version: string;
  /** An admin connection (INFO, FLUSHALL on the private one, key deletion on a shared one). */
  admin: Redis;
  pid?: number;
}

function redisServerInstalled(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

async function redisVersion(admin: Redis): Promise<string> {
  const info = await admin.info('server');
  return /^redis_version:(\S+)/m.exec(info)?.[1] ?? 'unknown';
}

/**
 * A private `redis-server` (no persistence, noeviction as BullMQ needs) on a free port when one
 * is installed, else the shared `REDIS_URL` (the scenarios then use their own key prefixes).
 */
export async function benchRedis(cleanup: Cleanup, forceShared = false): Promise<BenchRedis> {
  if (!forceShared && redisServerInstalled()) {
    const port = await freePort();
    const proc = new ChildProc('redis-server', 'redis-server', redisServerArgs(port), {});
    cleanup.add('redis-server', () => proc.stop(5_000));
    const url = `redis://127.0.0.1:${port}`;
    for (let attempt = 0; attempt < 100 && !(await redisAnswers(url)); attempt++) {
      if (!proc.running) throw new Error(`redis-server exited:\n${proc.tail()}`);
      await sleep(50);
    }
    const admin = new Redis(url, { maxRetriesPerRequest: null });
    cleanup.add('redis admin connection', async () => admin.disconnect());
    return {
      url,
      origin: 'private redis-server',
      private: true,
      version: await redisVersion(admin),
      admin,
      pid: proc.pid,
    };
  }
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (!(await redisAnswers(url)))
    throw new Error(`no redis-server installed and ${url} does not answer`);
  const admin = new Redis(url, { maxRetriesPerRequest: null });
  cleanup.add('redis admin connection', async () => admin.disconnect());
  return {
    url,
    origin: 'REDIS_URL (shared)',
    private: false,
    version: await redisVersion(admin),
    admin,
  };
}

/** Deletes every key under `prefix`. */
export async function clearRedis(redis: BenchRedis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.admin.unlink(...keys);
  } while (cursor !== '0');
}

/** `used_memory` from INFO memory, in bytes. */
export async function usedMemory(admin: Redis): Promise<number> {
  const info = await admin.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
}

/** Calls per command since the server started (`INFO commandstats`), by command name. */
export async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const info = await admin.info('commandstats');
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(m[1] ?? '', Number(m[2]));
  }
  return calls;
}

/** Commands per item between two {@link commandCalls} readings: the total and the top ones. */
export function commandsPerItem(
  before: Map<string, number>,
  after: Map<string, number>,
  items: number,
): { total: number; top: Record<string, number> } {
  const delta = [...after].map(([name, n]) => [name, n - (before.get(name) ?? 0)] as const);
  const per = (n: number) => Math.round((n / items) * 100) / 100;
  const total = delta.reduce((sum, [, n]) => sum + n, 0);
  const top = delta
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  return { total: per(total), top: Object.fromEntries(top.map(([name, n]) => [name, per(n)])) };
}
