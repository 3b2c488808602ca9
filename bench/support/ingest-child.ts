import { benchPrefix, benchRecord, CATEGORY, forEachLimit, type BenchContext } from './fixtures.ts';
import { PoolClient } from './http-client.ts';
import { cliProcess, clearRedis, freePort, waitForHttp, type ChildProc } from './processes.ts';

/** A `concordance-worker ingest` child of a scenario, with a client holding its token. */
export interface IngestChild {
  /** The local ids of the scenario's patients, each with the preset {@link CATEGORY}. */
  patients: string[];
  proc: ChildProc;
  client: PoolClient;
  /** Stops the child and its client, and deletes the keys under the scenario's prefix. */
  close(): Promise<void>;
}

/**
 * The environment of a `concordance-worker ingest` child on the bench's Redis: its prefix, one
 * ingest token, the bench's crosswalk key, the ingest port on 127.0.0.1, no health port, MLLP on
 * `mllpPort` (0: a free one the child picks) and the bench's log level.
 */
export function ingestChildEnv(
  ctx: BenchContext,
  options: { prefix: string; token: string; port: number; mllpPort?: number },
): Record<string, string> {
  return {
    REDIS_URL: ctx.redis.url,
    REDIS_PREFIX: options.prefix,
    INGEST_TOKENS: options.token,
    CROSSWALK_KEY: ctx.secret,
    INGEST_PORT: String(options.port),
    MLLP_PORT: String(options.mllpPort ?? 0),
    INGEST_HOST: '127.0.0.1',
    METRICS_PORT: '0',
    LOG_LEVEL: ctx.logLevel,
  };
}

/**
 * Starts `concordance-worker ingest` (no MLLP, no health port) under the scenario's own prefix,
 * waits for its `/readyz` (the routes answer 503 until Redis is reached), and registers the preset
 * {@link CATEGORY} for each of `count` patients (`<idPrefix>-<i>`), so that each of their updates
 * opens or joins a query.
 */
export async function startIngestChild(
  ctx: BenchContext,
  options: {
    name: string;
    token: string;
    idPrefix: string;
    count: number;
    /** More environment (the `tracing` scenario's TRACE_ENABLED and OTEL_* variables). */
    env?: Record<string, string>;
  },
): Promise<IngestChild> {
  const { name, token } = options;
  const prefix = benchPrefix(ctx, name.replaceAll('_', '-'));
  const patients = Array.from({ length: options.count }, (_, i) => `${options.idPrefix}-${i}`);
  const port = await freePort();
  const proc = cliProcess(name, ['ingest'], {
    ...ingestChildEnv(ctx, { prefix, token, port }),
    ...options.env,
  });
  const remove = ctx.cleanup.add(name, () => proc.stop());
  const client = new PoolClient('127.0.0.1', port, { authorization: `Bearer ${token}` });
  const close = async () => {
    await client.close();
    await proc.stop();
    remove();
    await clearRedis(ctx.redis, prefix);
  };
  try {
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, proc);
    ctx.say(`${name}: registering ${patients.length} presets`);
    await forEachLimit(patients, 16, async (id) => {
      const status = await client.send('PUT', `/v1/patients/${id}/presets/${CATEGORY}`);
      if (status !== 201 && status !== 200) throw new Error(`preset PUT answered ${status}`);
    });
  } catch (error) {
    await close();
    throw error;
  }
  return { patients, proc, client, close };
}

/**
 * The JSON text of the `i`-th record update of a scenario: patient `i mod n` with its ~1 KB record
 * (`benchRecord`), a new `event_id` (`<eventPrefix>-<i>`) and `changes: ["Condition"]`.
 */
/** The `setup` text of a scenario that loads one ingest child: the child, then `load`. */
export function ingestChildSetup(ctx: BenchContext, load: string): string {
  return `one \`concordance-worker ingest\` child process (LOG_LEVEL ${ctx.logLevel}); ${load}`;
}

export function updateBodyOf(
  patients: readonly string[],
  eventPrefix: string,
): (i: number) => string {
  const records = patients.map((_, i) => JSON.stringify(benchRecord(i)));
  return (i) => {
    const p = i % patients.length;
    return `{"patient_id":"${patients[p]}","event_id":"${eventPrefix}-${i}","changes":["Condition"],"assembled_patient":${records[p]}}`;
  };
}
