/**
 * Measures what tracing costs (docs/opentelemetry.md, "Measurements"); not part of the product,
 * nothing imports it.
 *
 *   sh scripts/with-node.sh node bench/tracing-cost.ts [spans] [runs]
 *
 * Import time: a fresh process imports the API alone, then the whole SDK (tracing-sdk.ts), `runs`
 * times each; the median is printed. CPU per span: a fresh process per mode starts `spans` spans
 * with three allowlisted attributes and ends them, flushing after every 5,120 (so that every
 * recorded span is exported, in batches of up to 512 as in service, through the allowlist
 * processor, the batch processor and the OTLP/HTTP JSON exporter to a receiver in another process,
 * and a sampled-out 90 % still leaves full batches). CPU is the process's user + system time over
 * the loop (process.cpuUsage), divided by the spans.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const HERE = fileURLToPath(new URL('../src/observability/tracing/', import.meta.url));

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

async function node(script: string, env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '--eval', script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    maxBuffer: 1 << 20,
  });
  return stdout.trim();
}

async function importMs(specifier: string): Promise<number> {
  const out = await node(`
    const t = performance.now();
    await import(${JSON.stringify(specifier)});
    console.log(performance.now() - t);
  `);
  return Number(out);
}

const RECEIVER = `
  import { createServer } from 'node:http';
  const server = createServer((req, res) => { req.resume(); req.on('end', () => res.end('{}')); });
  server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

async function cpuPerSpanMicros(spans: number, env: Record<string, string>): Promise<number> {
  const out = await node(
    `
    process.env.OTEL_BSP_MAX_QUEUE_SIZE = '6144';
    const { startTracing } = await import(${JSON.stringify(`${HERE}start-tracing.ts`)});
    const handle = await startTracing({ env: process.env });
    const tracer = handle.tracer;
    const loop = async (count) => {
      for (let done = 0; done < count; done += 512) {
        for (let i = 0; i < 512; i += 1) {
          const span = tracer.startSpan('cgs.poll');
          span.setAttribute('cw.feed', 'adt-main');
          span.setAttribute('cw.query.seq', i);
          span.setAttribute('http.response.status_code', 200);
          span.end();
        }
        if ((done + 512) % 5120 === 0) await handle.flush();
      }
      await handle.flush();
    };
    await loop(20_480); // warm-up
    const before = process.cpuUsage();
    await loop(${spans});
    const used = process.cpuUsage(before);
    await handle.shutdown();
    console.log((used.user + used.system) / ${spans});
  `,
    env,
  );
  return Number(out);
}

const spans = Number(process.argv[2] ?? 102_400);
const runs = Number(process.argv[3] ?? 5);

const api: number[] = [];
const sdk: number[] = [];
for (let i = 0; i < runs; i += 1) {
  api.push(await importMs('@opentelemetry/api'));
  sdk.push(await importMs(`${HERE}tracing-sdk.ts`));
}

const receiver = execFile(process.execPath, ['--input-type=module', '--eval', RECEIVER]);
const port = await new Promise<string>((resolve) =>
  receiver.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())),
);
const endpoint = `http://127.0.0.1:${port}`;
const modes: [string, Record<string, string>][] = [
  ['off (no endpoint: the API no-op tracer)', {}],
  ['on, always_off', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_off' }],
  [
    'on, parentbased_traceidratio 0.1',
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
    },
  ],
  [
    'on, always_on (every span exported)',
    { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_on' },
  ],
];
const cpu: Record<string, number> = {};
for (const [name, env] of modes) {
  const samples: number[] = [];
  for (let i = 0; i < runs; i += 1) samples.push(await cpuPerSpanMicros(spans, env));
  cpu[name] = median(samples);
}
receiver.kill();

console.log(
  JSON.stringify(
    {
      node: process.version,
      spans,
      runs,
      import_ms_median: { api: median(api), sdk: median(sdk) },
      cpu_us_per_span_median: cpu,
    },
    null,
    2,
  ),
);
