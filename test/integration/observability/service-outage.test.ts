import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PipelineStatus } from '../../../src/runtime/pipeline-status.ts';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { freePort } from '../../../tools/local-redis.ts';
import { eventually } from '../../support/eventually.ts';
import { OUTBOUND_QUEUE_LINES } from '../../support/outbound.ts';
import { API_KEY, PipelineHarness, sampleRecord } from '../../support/pipeline-harness.ts';

const MRN = 'OUTAGE-MRN-7731';

/** Quick debounce and polls; submission retries with a backoff long enough to be seen waiting. */
function configFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-outage-')), 'config.yaml');
  writeFileSync(
    path,
    [
      'queries:',
      '  debounce_ms: 100',
      '  submit_attempts: 12',
      '  submit_backoff_ms: 300',
      '  poll: { first_delay_ms: 50, factor: 2, max_delay_ms: 200, jitter: 0.2, deadline_ms: 60000 }',
      '  dispatch: { interval_ms: 20, batch: 100, lease_ms: 30000 }',
      ...OUTBOUND_QUEUE_LINES,
    ].join('\n'),
  );
  return path;
}

async function run(args: string[], env: Record<string, string>) {
  const cli = new CliProcess(args, env);
  const code = await cli.exited;
  return { code, stdout: cli.stdout.join('\n') };
}

/** The value of a gauge's series on a worker's /metrics, if it has one. */
async function scrape(healthUrl: string, series: string): Promise<number | undefined> {
  const text = await (await fetch(`${healthUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * A `concordance-worker work` process whose service URL points at a port where nothing listens
 * (what the default `service.env: local` does in a deployment without the simulator): the failure
 * is a warn line naming the host and ECONNREFUSED, `cw_service_up` goes to 0, `/readyz` and
 * `status` show it and the submission retrying; once a service listens on that port the query
 * goes through, the gauge goes back to 1 and `status` shows the service up.
 */
describe('a worker whose service does not answer', () => {
  let harness: PipelineHarness;
  let service: RunningSimulator | undefined;
  const processes: CliProcess[] = [];

  afterEach(async () => {
    for (const p of processes.splice(0)) await p.stop();
    await service?.close();
    await harness.close();
  });

  it('says so in warn lines, metrics, /readyz and status, and recovers', async () => {
    harness = await PipelineHarness.start();
    const port = await freePort();
    const host = `127.0.0.1:${port}`;
    const env = { ...harness.processEnv(), SERVICE_BASE_URL: `http://${host}` };
    const worker = new CliProcess(['--config', configFile(), 'work'], env);
    processes.push(worker);
    const healthUrl = (JSON.parse(await worker.waitForLine('workers started')) as { url: string })
      .url;
    expect(await scrape(healthUrl, `cw_service_up{host="${host}"}`)).toBeUndefined();

    const { patientServiceId } = await harness.update(MRN, ['END002'], sampleRecord('m'), 'ev-1');

    // The first failure: one warn line with the host (no path, no key) and the network code.
    const failed = JSON.parse(await worker.waitForLine('service request failed')) as Record<
      string,
      unknown
    >;
    expect(failed).toMatchObject({
      level: 40,
      service_host: host,
      status: 'ECONNREFUSED',
      endpoint: 'POST /v1/concordance',
      consecutive_failures: 1,
    });

    // The gauges, from the last outcome.
    await eventually(
      () => scrape(healthUrl, `cw_service_up{host="${host}"}`),
      (v) => v === 0,
    );
    expect(
      await scrape(healthUrl, `cw_service_consecutive_failures{host="${host}"}`),
    ).toBeGreaterThanOrEqual(1);

    // /readyz: still ready (the worker keeps its submissions), the service reported down.
    const readyz = await fetch(`${healthUrl}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toMatchObject({
      status: 'ready',
      service: {
        up: false,
        hosts: [
          {
            host,
            up: false,
            last_success_at: null,
            last_failure: { status: 'ECONNREFUSED', endpoint: 'POST /v1/concordance' },
          },
        ],
      },
    });

    // status: the submission retrying after its failure, and the failing host.
    // Redis alone (REDIS_URL, REDIS_PREFIX, REDIS_PARTITIONS), as an operator runs it.
    const statusEnv = Object.fromEntries(
      Object.entries(env).filter(([name]) => name.startsWith('REDIS_')),
    );
    const partition = harness.partitions.indexOf(patientServiceId);
    const status = await eventually(
      async () => JSON.parse((await run(['status', '--json'], statusEnv)).stdout) as PipelineStatus,
      (s) =>
        (s.submissions.find((p) => p.partition === partition)?.retrying ?? 0) === 1 &&
        s.service[0]?.up === false,
    );
    expect(status.submissions.find((p) => p.partition === partition)).toMatchObject({
      retrying: 1,
      complete: true,
      last_error: expect.stringContaining('ECONNREFUSED'),
    });
    expect(status.service).toEqual([
      expect.objectContaining({
        host,
        up: false,
        last_success_at: null,
        last_failure: { status: 'ECONNREFUSED', endpoint: 'POST /v1/concordance' },
      }),
    ]);
    const table = await eventually(
      async () => (await run(['status'], statusEnv)).stdout,
      (text) =>
        /: \d+ waiting, \d+ delayed, \d+ active; 1 retrying after a failure \(last error: .*ECONNREFUSED/.test(
          text,
        ),
    );
    expect(table).toMatch(
      new RegExp(
        `^service ${host}: FAILING: ECONNREFUSED on POST /v1/concordance, \\d+ failed requests in a row; last success never`,
        'm',
      ),
    );

    // The service comes up on that port: the retried submission goes through.
    service = await startSimulator({
      port,
      host: '127.0.0.1',
      apiKeys: [API_KEY],
      latency: { minMs: 5, maxMs: 20 },
    });
    const again = JSON.parse(await worker.waitForLine('service answering again')) as Record<
      string,
      unknown
    >;
    expect(again).toMatchObject({ level: 30, service_host: host });
    const [event] = await eventually(
      () => harness.delivered(),
      (events) => events.length === 1,
    );
    expect(event).toMatchObject({ status: 'completed', patient_service_id: patientServiceId });
    expect(await scrape(healthUrl, `cw_service_up{host="${host}"}`)).toBe(1);
    expect(await scrape(healthUrl, `cw_service_consecutive_failures{host="${host}"}`)).toBe(0);
    const recovered = await eventually(
      async () => JSON.parse((await run(['status', '--json'], statusEnv)).stdout) as PipelineStatus,
      (s) => s.service[0]?.up === true,
    );
    expect(recovered.submissions.every((p) => p.retrying === 0)).toBe(true);
    expect(recovered.service[0]?.last_success_at).toEqual(expect.any(Number));

    // No patient id and no API key in any line the worker wrote.
    const output = worker.lines.join('\n');
    expect(output).not.toContain(MRN);
    expect(output).not.toContain(API_KEY);
  });
});
