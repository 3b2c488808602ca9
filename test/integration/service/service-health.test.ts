import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServiceHealth } from '../../../src/observability/service-health.ts';
import { submitFailureOf } from '../../../src/queries/service-answers.ts';
import { QuerySubmission } from '../../../src/queries/query-submission.ts';
import { LatencyProfiles } from '../../../src/queries/latency-profiles.ts';
import { holdKey, PollSet } from '../../../src/queries/poll-set.ts';
import { createServiceClient } from '../../../src/service/create-service-client.ts';
import { captureLogs } from '../../support/log-capture.ts';
import { RULES, SCHEDULE, SubmissionFixture } from '../../support/submission-fixture.ts';

const API_KEY = 'api-key-marker-5f1c2e';
const PATH_MARKER = 'cgs-path-marker';

/** A real HTTP service that answers 503 to everything until told to accept submissions. */
async function flakyService(): Promise<{ server: Server; host: string; accept(): void }> {
  let accepting = false;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (!accepting) {
        response.writeHead(503, { 'content-type': 'application/json' }).end('{"detail":"down"}');
        return;
      }
      response.writeHead(202, { 'content-type': 'application/json' }).end('{"job_id":"remote-1"}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    server,
    host: `127.0.0.1:${port}`,
    accept: () => {
      accepting = true;
    },
  };
}

/**
 * A query's submission through the real service client against a real HTTP server that answers
 * 503, then accepts: the ServiceHealth fed by the client's `onResponse` warns naming the host and
 * the status (never the base URL's path or the key), the query that runs out of attempts ends with
 * a warn line naming the host, and `cw_service_up` goes to 0 and back to 1.
 */
describe('service health of a query submission against a failing service', () => {
  let fx: SubmissionFixture;
  let service: Awaited<ReturnType<typeof flakyService>>;

  beforeEach(async () => {
    fx = await SubmissionFixture.create(Date.now());
    service = await flakyService();
  });
  afterEach(async () => {
    service.server.close();
    await fx.cleanup();
  });

  it('warns with the host and 503, ends the query at warn naming the host, and recovers', async () => {
    const logs = captureLogs('info');
    const registry = new Registry();
    const health = new ServiceHealth({ registry, logger: logs.logger });
    const client = createServiceClient({
      baseUrl: `http://${service.host}/${PATH_MARKER}`,
      apiKey: API_KEY,
      onResponse: (info) => health.observe(info),
    });
    expect(client.host).toBe(service.host);
    const { env } = fx;
    const submission = new QuerySubmission({
      store: fx.store,
      ports: {
        ...fx.ports,
        async submit(payload, category, signal) {
          const { jobId } = await client.concordance.submit(
            { assembled_patient: payload, ccsr_category: category },
            { signal },
          );
          return jobId;
        },
        classify: submitFailureOf,
        mayHaveReached: () => undefined,
      },
      profiles: new LatencyProfiles({
        source: new PollSet({
          redis: env.redis,
          prefix: env.prefix,
          holdKey: holdKey(env.prefix),
          pauseKey: `${env.prefix}:paused`,
        }),
        now: () => fx.clock,
      }),
      rules: { ...RULES, submitAttempts: 2 },
      schedule: SCHEDULE,
      demographicsWaitS: 60,
      logger: logs.logger,
      serviceHost: client.host,
      now: () => fx.clock,
    });
    const up = async () =>
      (await registry.getSingleMetric('cw_service_up')?.get())?.values.find(
        (v) => v.labels.host === service.host,
      )?.value;
    const signal = new AbortController().signal;

    const psid = await fx.open('MRN-HEALTH-1');
    fx.clock += 5_000;
    const first = await submission.run(fx.query(psid), fx.clock, signal);
    expect(first.kind).toBe('retry');
    expect(await up()).toBe(0);
    const failed = await logs.waitFor((e) => e.msg === 'service request failed');
    expect(failed).toMatchObject({
      level: 40,
      service_host: service.host,
      status: '503',
      endpoint: 'POST /v1/concordance',
    });

    // The second attempt is the last: the query ends, at warn, naming the host.
    const last = await submission.run(fx.query(psid), fx.clock, signal, {
      attemptsMade: 1,
      stalledCounter: 0,
    });
    expect(last).toMatchObject({ kind: 'ended', failure: { code: 'ERR_SERVICE_UNAVAILABLE' } });
    const ended = await logs.waitFor((e) => e.msg === 'query finished');
    expect(ended).toMatchObject({
      level: 40,
      outcome: 'failed',
      error_code: 'ERR_SERVICE_UNAVAILABLE',
      service_host: service.host,
    });
    // Two failures, one line about them (the next comes after a minute at the earliest).
    expect(logs.lines.filter((l) => l.includes('service request'))).toHaveLength(1);

    // The service recovers: the next submission goes through, the gauge is 1 again.
    service.accept();
    const next = await fx.open('MRN-HEALTH-2');
    fx.clock += 5_000;
    expect(await submission.run(fx.query(next), fx.clock, signal)).toEqual({
      kind: 'submitted',
      remoteJobId: 'remote-1',
    });
    expect(await up()).toBe(1);
    expect(await logs.waitFor((e) => e.msg === 'service answering again')).toMatchObject({
      service_host: service.host,
      failures: 2,
    });

    const output = logs.lines.join('\n');
    for (const secret of [API_KEY, PATH_MARKER, 'MRN-HEALTH']) expect(output).not.toContain(secret);
  });
});
