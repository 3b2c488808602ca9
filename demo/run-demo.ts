import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { formatTable } from '../src/cli/format-table.ts';
import { generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../tools/cli-process.ts';
import { freePort } from '../tools/local-redis.ts';
import { percentile } from './percentile.ts';
import { ProgressBar } from './progress-bar.ts';
import { redisForDemo } from './redis-for-demo.ts';
import { DEMO_PATIENTS, demoRecord, type DemoPatient } from './sample-patients.ts';
import { startWebhookReceiver, type ReceivedEvent } from '../tools/webhook-receiver.ts';

const OUTPUT_DIR = new URL('../demo-output/', import.meta.url);
/** The demo gives up on results it has not seen after this long. */
const RESULTS_TIMEOUT_MS = 90_000;
const SIMULATED_LATENCY = '2000-5000';

interface Tally {
  accepted: number;
  duplicates: number;
  newQueries: number;
  coalesced: number;
  /** Record updates sent per patient: the newest record_version each key must reach. */
  versions: Map<string, number>;
}

const say = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<number> {
  const started = Date.now();
  const stops: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  process.once('SIGINT', () => void stopAll().then(() => process.exit(130)));

  try {
    const redis = await redisForDemo();
    if (redis === undefined) return 1;
    stops.push(() => redis.stop());
    say(`Redis: ${redis.url} (${redis.origin})`);

    const apiKey = `demo-${randomBytes(12).toString('hex')}`;
    const token = `demo-token-${randomBytes(12).toString('hex')}`;
    const webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;
    const prefix = `{cwdemo-${randomUUID().slice(0, 8)}}`;
    say(
      'CROSSWALK_KEY: generated a fresh one for this demo run (a real deployment must set its own).',
    );

    const simulator = new CliProcess(
      [
        'simulator',
        '--port',
        '0',
        '--api-key',
        apiKey,
        '--latency',
        SIMULATED_LATENCY,
        '--request-log',
        '2000',
      ],
      {},
    );
    stops.push(() => simulator.stop());
    const simulatorUrl = /listening on (\S+)/.exec(
      await simulator.waitForLine('listening on'),
    )?.[1];
    if (simulatorUrl === undefined) throw new Error('the simulator did not say where it listens');
    say(
      `Local Clinical Graph Service: ${simulatorUrl} (each concordance job takes ${SIMULATED_LATENCY} ms)`,
    );

    const receiver = await startWebhookReceiver({ secret: webhookSecret });
    stops.push(() => receiver.close());
    say(`Webhook receiver (verifies Standard Webhooks signatures): ${receiver.url}`);

    const [ingestPort, metricsPort] = [await freePort(), await freePort()];
    const pipeline = new CliProcess(['start'], {
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      SERVICE_BASE_URL: simulatorUrl,
      SERVICE_API_KEY: apiKey,
      INGEST_TOKENS: token,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_PORT: String(ingestPort),
      MLLP_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      METRICS_PORT: String(metricsPort),
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: webhookSecret,
      LOG_LEVEL: 'info',
    });
    stops.push(() => pipeline.stop());
    await pipeline.waitForLine('ingest listening');
    const ingestUrl = `http://127.0.0.1:${ingestPort}`;
    say(
      `Pipeline (concordance-worker start): ingest ${ingestUrl}, metrics http://127.0.0.1:${metricsPort}/metrics\n`,
    );

    const tally = await feed(ingestUrl, token);
    const keys = DEMO_PATIENTS.flatMap((p) =>
      p.problems.map((pr) => `${p.patientId}/${pr.category}`),
    );
    await waitForResults(receiver.events, keys, tally);

    const requests = (await (
      await fetch(`${simulatorUrl}/_admin/requests`, { headers: { 'x-admin-key': apiKey } })
    ).json()) as { method: string; path: string; status: number | null }[];
    const submitted = requests.filter(
      (r) => r.method === 'POST' && r.path === '/v1/concordance' && r.status === 202,
    ).length;
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

    mkdirSync(OUTPUT_DIR, { recursive: true });
    const lines = receiver.events.map((e) => JSON.stringify(e.payload)).join('\n');
    writeFileSync(new URL('events.jsonl', OUTPUT_DIR), lines === '' ? '' : `${lines}\n`);
    writeFileSync(new URL('pipeline.log', OUTPUT_DIR), `${pipeline.lines.join('\n')}\n`);

    const rejected = receiver.attempts.filter((a) => !a.verified).length;
    printSummary({ tally, received: receiver.events, rejected, submitted, metrics });
    say(`\nDelivered events: demo-output/events.jsonl; pipeline log: demo-output/pipeline.log`);
    say(
      `Finished in ${((Date.now() - started) / 1000).toFixed(1)} s. Everything shown is simulated; not medical advice.`,
    );
    const verified = rejected === 0 && receiver.events.length > 0;
    return verified ? 0 : 1;
  } finally {
    await stopAll();
  }
}

async function send(url: string, token: string, method: string, body?: unknown): Promise<Response> {
  return fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/**
 * Registers each patient's presets, then sends bursts of record updates: a first burst for
 * everyone (coalesced into one query per key), a resent event (a duplicate), and a second burst
 * for some patients while their first queries are being polled (follow-ups).
 */
async function feed(ingestUrl: string, token: string): Promise<Tally> {
  const tally: Tally = {
    accepted: 0,
    duplicates: 0,
    newQueries: 0,
    coalesced: 0,
    versions: new Map(),
  };
  const update = async (patient: DemoPatient, eventId: string, resend = false) => {
    const revision = (tally.versions.get(patient.patientId) ?? 0) + (resend ? 0 : 1);
    const response = await send(`${ingestUrl}/v1/record-updates`, token, 'POST', {
      patient_id: patient.patientId,
      event_id: eventId,
      source: 'demo',
      changes: ['Observation'],
      assembled_patient: demoRecord(patient, revision),
    });
    if (response.status === 202) {
      tally.accepted++;
      tally.versions.set(patient.patientId, revision);
      const answer = (await response.json()) as { queries: { coalesced: boolean }[] };
      for (const q of answer.queries) {
        if (q.coalesced) tally.coalesced++;
        else tally.newQueries++;
      }
    } else if (response.status === 200) {
      tally.duplicates++;
    } else {
      throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
    }
  };

  for (const patient of DEMO_PATIENTS) {
    for (const problem of patient.problems) {
      const put = await send(
        `${ingestUrl}/v1/patients/${patient.patientId}/presets/${problem.category}`,
        token,
        'PUT',
      );
      if (put.status !== 201 && put.status !== 200) throw new Error(`preset: ${put.status}`);
    }
  }
  say(
    `Presets: ${DEMO_PATIENTS.reduce((n, p) => n + p.problems.length, 0)} for ${DEMO_PATIENTS.length} patients`,
  );

  await Promise.all(
    DEMO_PATIENTS.map(async (patient, i) => {
      for (let n = 0; n < 3 + (i % 4); n++) await update(patient, `${patient.patientId}-a${n}`);
    }),
  );
  await update(DEMO_PATIENTS[0] as DemoPatient, `${DEMO_PATIENTS[0]?.patientId}-a0`, true);
  say(
    `Burst 1: ${tally.accepted} updates accepted (${tally.duplicates} resent event answered as a duplicate); they opened ${tally.newQueries} queries and joined open ones ${tally.coalesced} times`,
  );

  // Wait for the first submissions before the second burst, so that it lands during polling.
  await new Promise((resolve) => setTimeout(resolve, 3_500));
  const before = tally.accepted;
  for (const patient of DEMO_PATIENTS.filter((_, i) => i % 2 === 0)) {
    for (let n = 0; n < 2; n++) await update(patient, `${patient.patientId}-b${n}`);
  }
  say(
    `Burst 2 (during polling): ${tally.accepted - before} updates for ${Math.ceil(DEMO_PATIENTS.length / 2)} patients\n`,
  );
  return tally;
}

/** Resolves once every key has a result on its newest record, or the time is up. */
async function waitForResults(received: readonly ReceivedEvent[], keys: string[], tally: Tally) {
  const bar = new ProgressBar('Results on the newest record', keys.length);
  const until = Date.now() + RESULTS_TIMEOUT_MS;
  for (;;) {
    const done = new Set(
      received
        .map((e) => e.payload)
        .filter((b) => b.record_version === tally.versions.get(String(b.patient_id)))
        .map((b) => `${String(b.patient_id)}/${String(b.ccsr_category)}`),
    );
    bar.update(done.size, `(${received.length} deliveries)`);
    if (done.size >= keys.length || Date.now() > until) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  bar.finish();
}

function metricValue(metrics: string, name: string, labels: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

function printSummary(run: {
  tally: Tally;
  received: readonly ReceivedEvent[];
  rejected: number;
  submitted: number;
  metrics: string;
}) {
  const { tally, received } = run;
  const lastUpdate = (e: ReceivedEvent) =>
    Date.parse((e.payload.triggered_by as { last_update_at: string }).last_update_at);
  const lags = received.map((e) => (e.receivedAt - lastUpdate(e)) / 1000);
  const completed = received.filter((e) => e.payload.type === 'concordance.completed').length;
  const superseded = metricValue(run.metrics, 'cw_queries_finished_total', 'outcome="superseded"');
  const seconds = (v: number) => (Number.isNaN(v) ? '-' : `${v.toFixed(2)} s`);
  const rows: [string, string][] = [
    ['record updates accepted', String(tally.accepted)],
    ['duplicates (same event_id)', String(tally.duplicates)],
    ['queries opened / updates coalesced', `${tally.newQueries} / ${tally.coalesced}`],
    ['queries submitted to the service', String(run.submitted)],
    ['superseded by a newer query', String(superseded)],
    ['results completed / failed', `${completed} / ${received.length - completed}`],
    ['webhook deliveries verified / rejected', `${received.length} / ${run.rejected}`],
    [
      'update-to-delivery p50 / p95',
      `${seconds(percentile(lags, 50))} / ${seconds(percentile(lags, 95))}`,
    ],
  ];
  process.stdout.write(`\n${formatTable(['summary', 'value'], rows, 60)}\n`);
}

process.exitCode = await main().catch((err: unknown) => {
  say(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  return 1;
});
