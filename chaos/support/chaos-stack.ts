import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import {
  ChildProc,
  cliProcess,
  freePort,
  waitForHttp,
  waitForLine,
  Cleanup,
} from '../../bench/support/processes.ts';
import { WEBHOOK_DELIVERIES } from '../../src/delivery/webhook-deliveries-queue.ts';
import { generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import { queryOutboxKey } from '../../src/queries/query-outbox.ts';
import { CONCORDANCE_QUERIES } from '../../src/queues/queue-names.ts';
import { redisAnswers, redisServerArgs } from '../../tools/local-redis.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../tools/webhook-receiver.ts';
import { TcpProxy } from '../../tools/tcp-proxy.ts';

/**
 * The configuration the chaos processes run with (merged over config/default.yaml). Shorter than
 * production timings so that a run fits in minutes; the JSON output repeats it.
 */
export const CHAOS_CONFIG = {
  service: { timeout_ms: 3_000 },
  queries: {
    debounce_ms: 300,
    poll: { first_delay_ms: 300, factor: 2, max_delay_ms: 2_000, jitter: 0.2, deadline_ms: 30_000 },
    submit_backoff_ms: 500,
    // A killed worker's claims and polls come back after 5 s (the service times out after 3 s).
    dispatch: { interval_ms: 100, batch: 500, lease_ms: 5_000 },
    polling: { interval_ms: 50, batch: 500, concurrency: 200, lease_ms: 5_000, latency_window: 64 },
  },
  presets: { rules: [], from_problem_list: { enabled: true, categories: 'outpatient_default' } },
};

/** Everything one scenario runs against; each scenario gets its own. */
export interface ChaosStack {
  /** The private redis-server (the pipeline reaches it only through `proxy`). */
  redisUrl: string;
  admin: Redis;
  proxy: TcpProxy;
  simulatorUrl: string;
  apiKey: string;
  token: string;
  receiver: WebhookReceiver;
  /** While true the receiver answers 503 to every request (it still verifies signatures). */
  receiverDown: { value: boolean };
  ingestUrl: string;
  mllpPort: number;
  ingest: ManagedProcess;
  worker: ManagedProcess;
  /** Sets the simulator's fault profile (`{}` clears it). */
  setFaults(profile: object): Promise<void>;
  /** Job counts of the query and webhook queues, read from the private Redis directly. */
  queueCounts(): Promise<Record<string, Record<string, number>>>;
  /** The simulator's request log. */
  serviceRequests(): Promise<
    { method: string; path: string; status: number | null; body: unknown }[]
  >;
  close(): Promise<void>;
}

/** A pipeline process that can be killed and started again on the same ports. */
export interface ManagedProcess {
  readonly proc: ChildProc;
  readonly starts: number;
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
  /**
   * SIGTERM, then waits up to `graceMs` (SIGKILL after that): how it ended and how long it took.
   * Undefined when it was not running.
   */
  shutdown(graceMs: number): Promise<ShutdownResult | undefined>;
}

/** How a pipeline process ended after SIGTERM. */
export interface ShutdownResult {
  exit_code: number | null;
  /** `SIGKILL` when it did not exit within the grace period. */
  signal: string | null;
  ms: number;
}

function managed(
  name: string,
  spawnIt: () => ChildProc,
  ready: (proc: ChildProc) => Promise<unknown>,
  cleanup: Cleanup,
): ManagedProcess {
  let current: ChildProc | undefined;
  let starts = 0;
  const stopIt = async () => {
    if (current?.running) await current.stop(30_000);
  };
  cleanup.add(name, stopIt);
  return {
    get proc() {
      if (!current) throw new Error(`${name} never started`);
      return current;
    },
    get starts() {
      return starts;
    },
    async start() {
      current = spawnIt();
      starts++;
      await ready(current);
    },
    async kill(signal = 'SIGKILL') {
      if (!current?.running) return;
      current.child.kill(signal);
      await current.exited;
    },
    stop: stopIt,
    async shutdown(graceMs) {
      const proc = current;
      if (!proc?.running) return undefined;
      const started = Date.now();
      proc.child.kill('SIGTERM');
      const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
      await proc.exited;
      clearTimeout(timer);
      return {
        exit_code: proc.child.exitCode,
        signal: proc.child.signalCode,
        ms: Date.now() - started,
      };
    },
  };
}

export interface StackOptions {
  /** The run's cleanup: closes this stack if the run is interrupted. */
  cleanup: Cleanup;
  tmpDir: string;
  name: string;
  /** Concordance job duration range of the local service. */
  latency: string;
  logLevel: string;
}

/**
 * Starts a private redis-server, the TCP proxy in front of it, the local service
 * (`concordance-worker simulator`), a webhook receiver that verifies signatures, and the
 * pipeline as two processes (`ingest`, `work`) reaching Redis only through the proxy.
 */
export async function startChaosStack(o: StackOptions): Promise<ChaosStack> {
  const cleanup = new Cleanup();
  const removeFromParent = o.cleanup.add(o.name, () => cleanup.run());
  const apiKey = randomBytes(24).toString('base64url');
  const token = randomBytes(24).toString('base64url');
  const webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;

  // The local service starts (a second or more) while Redis comes up.
  const simulatorPort = await freePort();
  const simulator = cliProcess(
    `${o.name} simulator`,
    [
      'simulator',
      ...['--port', String(simulatorPort), '--api-key', apiKey, '--latency', o.latency],
      ...['--request-log', '200000'],
    ],
    {},
  );
  cleanup.add(`${o.name} simulator`, () => simulator.stop(5_000));
  const simulatorUp = waitForLine(simulator, 'listening on', 60_000);
  simulatorUp.catch(() => undefined); // awaited below; a rejection before then is not unhandled
  const simulatorUrl = `http://127.0.0.1:${simulatorPort}`;

  const redisPort = await freePort();
  const redisProc = new ChildProc('redis-server', 'redis-server', redisServerArgs(redisPort), {});
  cleanup.add(`${o.name} redis-server`, () => redisProc.stop(5_000));
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  for (let i = 0; i < 100 && !(await redisAnswers(redisUrl)); i++) {
    if (!redisProc.running) throw new Error(`redis-server exited:\n${redisProc.tail()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const admin = new Redis(redisUrl, { maxRetriesPerRequest: null });
  cleanup.add(`${o.name} redis admin`, async () => admin.disconnect());
  const proxy = await TcpProxy.start({ host: '127.0.0.1', port: redisPort });
  cleanup.add(`${o.name} proxy`, () => proxy.close());
  await simulatorUp;

  const receiverDown = { value: false };
  const receiver = await startWebhookReceiver({
    secret: webhookSecret,
    respond: () => (receiverDown.value ? 503 : 204),
  });
  cleanup.add(`${o.name} webhook receiver`, () => receiver.close());

  const configPath = join(o.tmpDir, `${o.name}.yaml`);
  writeFileSync(configPath, stringify(CHAOS_CONFIG));
  const ingestPort = await freePort();
  const mllpPort = await freePort();
  const metricsPort = await freePort();
  const ingestHealthPort = await freePort();
  const env = {
    REDIS_URL: proxy.redisUrl,
    REDIS_PREFIX: '{cw}',
    SERVICE_BASE_URL: simulatorUrl,
    SERVICE_API_KEY: apiKey,
    INGEST_TOKENS: token,
    CROSSWALK_KEY: generateCrosswalkSecret(),
    WEBHOOK_URL: receiver.url,
    WEBHOOK_SECRET: webhookSecret,
    INGEST_PORT: String(ingestPort),
    INGEST_HOST: '127.0.0.1',
    MLLP_PORT: String(mllpPort),
    METRICS_PORT: String(metricsPort),
    LOG_LEVEL: o.logLevel,
  };
  const ingest = managed(
    `${o.name} ingest`,
    // Each role has its health port (METRICS_PORT); two on one host need two ports.
    () =>
      cliProcess(`${o.name} ingest`, ['--config', configPath, 'ingest'], {
        ...env,
        METRICS_PORT: String(ingestHealthPort),
      }),
    (proc) => waitForHttp(`http://127.0.0.1:${ingestPort}/readyz`, proc, 60_000),
    cleanup,
  );
  const worker = managed(
    `${o.name} worker`,
    () => cliProcess(`${o.name} worker`, ['--config', configPath, 'work'], env),
    (proc) => waitForHttp(`http://127.0.0.1:${metricsPort}/readyz`, proc, 60_000),
    cleanup,
  );
  await Promise.all([ingest.start(), worker.start()]);

  const adminHeaders = { 'x-admin-key': apiKey };
  const queues = [CONCORDANCE_QUERIES, WEBHOOK_DELIVERIES].map(
    (name) => new Queue(name, { connection: admin, prefix: '{cw}' }),
  );
  cleanup.add(`${o.name} queue readers`, () => Promise.all(queues.map((q) => q.close())));
  return {
    redisUrl,
    admin,
    proxy,
    simulatorUrl,
    apiKey,
    token,
    receiver,
    receiverDown,
    ingestUrl: `http://127.0.0.1:${ingestPort}`,
    mllpPort,
    ingest,
    worker,
    async setFaults(profile) {
      const response = await fetch(`${simulatorUrl}/_admin/faults`, {
        method: 'POST',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        body: JSON.stringify(profile),
      });
      if (!response.ok) throw new Error(`fault profile refused: ${await response.text()}`);
    },
    async queueCounts() {
      const counts: Record<string, Record<string, number>> = {};
      for (const queue of queues) counts[queue.name] = await queue.getJobCounts();
      // Queries ingest opened that no worker has queued yet (the due set) are still to run.
      counts['due set'] = { waiting: await admin.zcard(queryOutboxKey('{cw}')) };
      return counts;
    },
    async serviceRequests() {
      const response = await fetch(`${simulatorUrl}/_admin/requests`, { headers: adminHeaders });
      return (await response.json()) as Awaited<ReturnType<ChaosStack['serviceRequests']>>;
    },
    async close() {
      removeFromParent();
      await cleanup.run();
    },
  };
}
