import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../../src/app/compose-app.ts';
import { loadConfig } from '../../../src/config/load-config.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import {
  startTracing,
  type TracingHandle,
} from '../../../src/observability/tracing/start-tracing.ts';
import { requestConnection } from '../../../src/queues/redis-connections.ts';
import { captureLogs } from '../../support/log-capture.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../../support/otlp-receiver.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import {
  sendMllp,
  startIngestTracingStack,
  TOKEN,
  waitForSpan,
  type IngestTracingStack,
} from './support/ingest-tracing-stack.ts';

/** Planted in the messages: in no exported body. */
const PATIENT = 'MRN-OTEL-PLANTED-40917';
const MRN = 'MRN8830417';
const NAME = 'QUIXOTEZ';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

function post(stack: IngestTracingStack, eventId: string, traceparent?: string, age = 57) {
  return fetch(`${stack.url}/v1/record-updates`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      ...(traceparent === undefined ? {} : { traceparent }),
    },
    body: JSON.stringify({
      patient_id: PATIENT,
      event_id: eventId,
      source: 'mirth',
      // Another age is another record: the update is stored again (and joins the open query).
      assembled_patient: { ...samplePatient, demographics: { age, gender: 'female' } },
    }),
  });
}

function hl7(controlId: string): string {
  return [
    `MSH|^~\\&|EPICADT|WESTHOSP|CW|CW|20240101120000||ADT^A08|${controlId}|P|2.5.1`,
    'EVN|A08|20240101120000',
    `PID|||${MRN}^^^WEST^MR||${NAME}^TOM||19800530|M`,
    '',
  ].join('\r');
}

function tracingEnv(receiver: OtlpReceiver, sampler: string) {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_TRACES_SAMPLER: sampler,
    // Exported at once, so that the test waits for the spans' arrival, never for a timer.
    OTEL_BSP_SCHEDULE_DELAY: '0',
  };
}

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function tracingTo(receiver: OtlpReceiver, sampler: string): Promise<TracingHandle> {
  const tracing = await startTracing({ env: tracingEnv(receiver, sampler), role: 'ingest' });
  cleanups.push(() => tracing.shutdown());
  return tracing;
}

async function receiver(): Promise<OtlpReceiver> {
  const started = await startOtlpReceiver();
  cleanups.push(() => started.close());
  return started;
}

async function ingest(tracing: TracingHandle | undefined): Promise<IngestTracingStack> {
  const stack = await startIngestTracingStack(tracing);
  cleanups.push(() => stack.close());
  return stack;
}

describe('ingest spans (OTLP to an in-test receiver)', () => {
  it('a JSON update continues the engine trace: server span, redis.commit, receipt, query tp', async () => {
    const otlp = await receiver();
    const tracing = await tracingTo(otlp, 'always_on');
    const stack = await ingest(tracing);
    const traceId = hex(16);
    const engineSpan = hex(8);

    const res = await post(stack, 'evt-otel-json-1', `00-${traceId}-${engineSpan}-01`);
    expect(res.status).toBe(202);
    const server = await waitForSpan(otlp, (s) => s.name === 'POST /v1/record-updates');
    expect(server).toMatchObject({ traceId, parentSpanId: engineSpan, kind: 2 });
    expect(server.attributes).toEqual({
      'http.request.method': 'POST',
      'http.route': '/v1/record-updates',
      'http.response.status_code': 202,
      'url.scheme': 'http',
      'cw.feed': 'json',
    });
    expect(server.resource['cw.role']).toBe('ingest');
    const commit = await waitForSpan(otlp, (s) => s.name === 'redis.commit');
    expect(commit).toMatchObject({ traceId, parentSpanId: server.spanId, kind: 1 });
    expect(commit.attributes).toEqual({
      'db.system.name': 'redis',
      'db.operation.name': 'commit',
      'cw.partition': 0,
      'cw.outcome': 'ok',
    });

    const [receipt] = await stack.receipts('evt-otel-json-1');
    expect(receipt?.trace_id).toBe(traceId);
    const query = await stack.queryTrace(receipt?.psid ?? '');
    expect(query.tp).toBe(`00-${traceId}-${server.spanId}-01`);

    // A second message joins the open query in a trace of its own: the query keeps the first's.
    const other = hex(16);
    expect((await post(stack, 'evt-otel-json-2', `00-${other}-${hex(8)}-01`, 58)).status).toBe(202);
    const [joined] = await stack.receipts('evt-otel-json-2');
    expect(joined?.queries).toEqual([{ category: 'END002', seq: 1, coalesced: true }]);
    expect(joined?.trace_id).toBe(other);
    expect((await stack.queryTrace(joined?.psid ?? '')).tp).toBe(query.tp);
  });

  it('a batch and an HL7 v2 message over HTTP: their route spans, batch size, commit-many', async () => {
    const otlp = await receiver();
    const tracing = await tracingTo(otlp, 'always_on');
    const stack = await ingest(tracing);
    const traceId = hex(16);
    const item = (eventId: string, patient: string) => ({
      patient_id: patient,
      event_id: eventId,
      source: 'mirth',
      assembled_patient: samplePatient,
    });
    const batch = await fetch(`${stack.url}/v1/record-updates/batch`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${hex(8)}-01`,
      },
      body: JSON.stringify([item('evt-otel-b-1', PATIENT), item('evt-otel-b-2', `${PATIENT}-2`)]),
    });
    expect(batch.status).toBe(202);
    const server = await waitForSpan(otlp, (s) => s.name === 'POST /v1/record-updates/batch');
    expect(server.traceId).toBe(traceId);
    expect(server.attributes).toMatchObject({ 'cw.feed': 'json', 'cw.batch.size': 2 });
    const commit = await waitForSpan(otlp, (s) => s.name === 'redis.commit');
    expect(commit.parentSpanId).toBe(server.spanId);
    expect(commit.attributes).toMatchObject({
      'db.operation.name': 'commit-many',
      'cw.outcome': 'done',
    });
    for (const id of ['evt-otel-b-1', 'evt-otel-b-2']) {
      expect((await stack.receipts(id))[0]?.trace_id).toBe(traceId);
    }

    const http = await fetch(`${stack.url}/v1/hl7v2`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/hl7-v2' },
      body: hl7('CTRL-OTEL-HTTP'),
    });
    expect(http.status).toBe(200);
    const hl7Span = await waitForSpan(otlp, (s) => s.name === 'POST /v1/hl7v2');
    expect(hl7Span.parentSpanId).toBeUndefined();
    expect(hl7Span.attributes).toMatchObject({
      'cw.feed': 'hl7v2-http',
      'http.response.status_code': 200,
    });
    expect((await stack.receipts('CTRL-OTEL-HTTP'))[0]?.trace_id).toBe(hl7Span.traceId);

    // Refused by the bearer check (a hook before the route's): its span too.
    const refused = await fetch(`${stack.url}/v1/hl7v2`, {
      method: 'POST',
      headers: { 'content-type': 'application/hl7-v2' },
      body: hl7('CTRL-OTEL-401'),
    });
    expect(refused.status).toBe(401);
    await waitForSpan(
      otlp,
      (s) => s.name === 'POST /v1/hl7v2' && s.attributes['http.response.status_code'] === 401,
    );
  });

  it('an MLLP message starts its own trace; no patient id or name in any exported body', async () => {
    const otlp = await receiver();
    const tracing = await tracingTo(otlp, 'always_on');
    const stack = await ingest(tracing);

    const ack = await sendMllp(stack.mllpPort, hl7('CTRL-OTEL-1'));
    expect(ack).toContain('MSA|AA|CTRL-OTEL-1');
    const mllp = await waitForSpan(otlp, (s) => s.name === 'hl7v2.mllp.message');
    expect(mllp.parentSpanId).toBeUndefined();
    expect(mllp.attributes).toEqual({ 'cw.feed': 'hl7v2-mllp', 'cw.outcome': 'accepted' });
    const commit = await waitForSpan(
      otlp,
      (s) => s.name === 'redis.commit' && s.traceId === mllp.traceId,
    );
    expect(commit.parentSpanId).toBe(mllp.spanId);
    const [receipt] = await stack.receipts('CTRL-OTEL-1');
    expect(receipt?.trace_id).toBe(mllp.traceId);
    expect((await stack.queryTrace(receipt?.psid ?? '')).tp).toBe(
      `00-${mllp.traceId}-${mllp.spanId}-01`,
    );

    // The JSON feed too, then every body the receiver got is searched for the planted values.
    expect((await post(stack, 'evt-otel-json-3')).status).toBe(202);
    await waitForSpan(otlp, (s) => s.name === 'POST /v1/record-updates');
    await tracing.flush();
    expect(otlp.rejected).toEqual([]);
    const bodies = otlp.bodies.join('\n');
    expect(bodies).toContain('hl7v2.mllp.message');
    for (const planted of [PATIENT, MRN, NAME, TOKEN, 'Diabetes type 2', 'EPICADT']) {
      expect(bodies).not.toContain(planted);
    }
  });

  it('an unsampled engine trace: nothing exported, the receipt keeps no trace id, no tp', async () => {
    const otlp = await receiver();
    const tracing = await tracingTo(otlp, 'parentbased_always_on');
    const stack = await ingest(tracing);
    const traceId = hex(16);

    expect((await post(stack, 'evt-otel-unsampled', `00-${traceId}-${hex(8)}-00`)).status).toBe(
      202,
    );
    const [receipt] = await stack.receipts('evt-otel-unsampled');
    expect(receipt?.trace_id).toBeNull();
    expect((await stack.queryTrace(receipt?.psid ?? '')).tp).toBeUndefined();
    await tracing.flush();
    expect(otlp.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  });

  it('tracing off: a traceparent changes nothing, no trace id, no tp', async () => {
    const stack = await ingest(undefined);
    const res = await post(stack, 'evt-otel-off', `00-${hex(16)}-${hex(8)}-01`);
    expect(res.status).toBe(202);
    const [receipt] = await stack.receipts('evt-otel-off');
    expect(receipt?.trace_id).toBeNull();
    const query = await stack.queryTrace(receipt?.psid ?? '');
    expect(query.messages).toBe(1);
    expect(query.tp).toBeUndefined();
    await sendMllp(stack.mllpPort, hl7('CTRL-OTEL-OFF'));
    expect((await stack.receipts('CTRL-OTEL-OFF'))[0]?.trace_id).toBeNull();
  });

  it('tracing off adds no hook to the ingest app; on adds the span hooks', async () => {
    const env = await isolatedRedis();
    cleanups.push(() => env.cleanup());
    const config = loadConfig({
      env: {
        INGEST_TOKENS: TOKEN,
        REDIS_PREFIX: env.prefix,
        CROSSWALK_KEY: generateCrosswalkSecret(),
      },
    });
    const redis = requestConnection(testRedisUrl(), 'otel-hooks-test');
    redis.on('error', () => undefined);
    if (redis.status !== 'ready') await once(redis, 'ready');
    cleanups.push(async () => redis.disconnect());
    const otlp = await receiver();
    const on = await tracingTo(otlp, 'always_on');
    const routesOf = async (tracing: TracingHandle | undefined) => {
      const app = App.compose(config, captureLogs('info').logger, {
        redis,
        registry: new Registry(),
        ...(tracing === undefined ? {} : { tracing }),
      });
      const built = await app.ingestApp(app.ingestParts());
      await built.ready();
      const printed = built.printRoutes({ includeHooks: true });
      await built.close();
      return { printed, enabled: app.tracing.enabled };
    };
    const off = await routesOf(undefined);
    expect(off.enabled).toBe(false);
    expect(off.printed).toContain('hl7v2 (POST)');
    expect(off.printed).not.toContain('IngestSpan');
    const traced = await routesOf(on);
    expect(traced.enabled).toBe(true);
    expect(traced.printed).toContain('startIngestSpan');
  });
});
