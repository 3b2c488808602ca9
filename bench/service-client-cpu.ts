/**
 * CPU the service client costs per request, on the client side only: the simulator runs as a
 * child process with zero job latency, and this process does nothing but the client's calls —
 * concordance GET polls, with a submit every `--submit-every` calls — at `--concurrency`. After a
 * warm-up, `process.cpuUsage()` (user + system, GC included) is read around each round; stdout
 * gets one JSON line with every round and their median.
 *
 *   node bench/service-client-cpu.ts [--requests 20000] [--concurrency 50] [--submit-every 40]
 *     [--rounds 3] [--warmup 10000] [--client DIR]
 *
 * `--client DIR` loads `createServiceClient` from another checkout (e.g. `/work/main`), with that
 * checkout's dependencies, to compare two versions of the client against the same simulator.
 */
import { resolve } from 'node:path';
import type * as ServiceClientModule from '../src/service/create-service-client.ts';
import { parseArgs } from 'node:util';
import { API_KEY, benchRecord, CATEGORY, forEachLimit } from './support/fixtures.ts';
import { cliProcess, processCpuMs, waitForLine } from './support/processes.ts';
import { round, summarize } from './support/stats.ts';

type ClientModule = typeof ServiceClientModule;

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '50' },
    'submit-every': { type: 'string', default: '40' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '10000' },
    client: { type: 'string' },
  },
});
const count = (name: keyof typeof values): number => {
  const value = Number(values[name]);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`--${name} must be an integer >= 1`);
  return value;
};
const requests = count('requests');
const concurrency = count('concurrency');
const submitEvery = count('submit-every');
const rounds = count('rounds');
const warmup = count('warmup');
const clientRoot = resolve(values.client ?? new URL('..', import.meta.url).pathname);

const simulator = cliProcess(
  'simulator',
  ['simulator', '--port', '0', '--api-key', API_KEY, '--latency', '0-0', '--request-log', '0'],
  {},
);
try {
  const url = /listening on (\S+)/.exec(await waitForLine(simulator, 'listening on'))?.[1];
  if (url === undefined) throw new Error('the simulator printed no address');
  const { createServiceClient } = (await import(
    `${clientRoot}/src/service/create-service-client.ts`
  )) as ClientModule;
  const client = createServiceClient({ baseUrl: url, apiKey: API_KEY });
  const jobIds = await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const { jobId } = await client.concordance.submit({
        assembled_patient: benchRecord(i),
        ccsr_category: CATEGORY,
      });
      return jobId;
    }),
  );
  /** `total` calls: polls of the known jobs, and a submit every `submitEvery`-th call. */
  const run = (total: number) =>
    forEachLimit(Array.from({ length: total }), concurrency, async (_, i) => {
      if (i % submitEvery === submitEvery - 1) {
        await client.concordance.submit({
          assembled_patient: benchRecord(i),
          ccsr_category: CATEGORY,
        });
      } else {
        const job = await client.concordance.get(jobIds[i % jobIds.length] ?? '');
        if (job.state !== 'success') throw new Error(`job ${job.status}, expected completed`);
      }
    });

  await run(warmup);
  const perRequest: number[] = [];
  const results = [];
  for (let r = 0; r < rounds; r++) {
    const serverBefore = processCpuMs(simulator.pid) ?? NaN;
    const before = process.cpuUsage();
    const started = performance.now();
    await run(requests);
    const wallMs = performance.now() - started;
    const cpu = process.cpuUsage(before);
    perRequest.push((cpu.user + cpu.system) / requests);
    results.push({
      cpuUsPerRequest: round((cpu.user + cpu.system) / requests, 1),
      userMs: round(cpu.user / 1000, 0),
      systemMs: round(cpu.system / 1000, 0),
      wallMs: round(wallMs, 0),
      requestsPerSecond: round(requests / (wallMs / 1000), 0),
      simulatorCpuMs: (processCpuMs(simulator.pid) ?? NaN) - serverBefore,
    });
  }
  const median = summarize(perRequest, 1).p50;
  process.stdout.write(
    `${JSON.stringify({
      client: clientRoot,
      node: process.version,
      requests,
      submits: Math.floor(requests / submitEvery),
      concurrency,
      warmup,
      cpuUsPerRequestMedian: median,
      rounds: results,
    })}\n`,
  );
} finally {
  await simulator.stop();
}
