import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageTraceReader } from '../../../src/trace/message-trace-reader.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../tools/webhook-receiver.ts';
import { eventually } from '../../support/eventually.ts';
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../../support/otlp-receiver.ts';
import type { PipelineProcesses } from '../../support/pipeline-processes.ts';
import {
  sendThreeFeeds,
  plantedIn,
  startThreeFeedsPipeline,
  traceEntryText,
  type ThreeFeeds,
} from '../trace/support/three-feeds.ts';

const API_KEY = 'otel-e2e-api-key';
const TOKEN = 'otel-e2e-ingest-token-7q2w9e';
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/** OTLP span kinds (the enum of the protocol: the API's SpanKind + 1). */
const KIND = { internal: 1, server: 2, client: 3 } as const;

const ENGINE_TRACE = randomBytes(16).toString('hex');
const ENGINE_SPAN = randomBytes(8).toString('hex');

/** Planted identifiers and free text: in no exported span and no trace entry at rest. */
const FEEDS: ThreeFeeds = {
  control: { hl7: 'OTL-ADT-0001', fhir: '5811', json: 'otl-json-0001' },
  hl7Mrn: 'OTLE2E5512',
  hl7Name: 'Brambleworth',
  fhirPatient: 'otle2e-fhir-3307',
  jsonPatient: 'OTLE2E-JSON-8124',
  ages: { hl7: 52, fhir: 66, json: 59 },
  tag: 'otl',
  note: 'Planted free text: patient lives near the old mill',
  traceparent: `00-${ENGINE_TRACE}-${ENGINE_SPAN}-01`,
};
const PLANTED = [...plantedIn(FEEDS), 'old mill'];

/** Resolves with the first span `match` finds, waiting for the receiver's next exports. */
async function spanWhere(
  otlp: OtlpReceiver,
  match: (span: ReceivedSpan) => boolean,
): Promise<ReceivedSpan> {
  for (;;) {
    const found = otlp.spans.find(match);
    if (found !== undefined) return found;
    await otlp.waitForSpans(otlp.spans.length + 1, { timeoutMs: 60_000 });
  }
}

/** The links of the span `spanId` as exported (the receiver's spans leave them out). */
function linksOf(otlp: OtlpReceiver, spanId: string): { traceId: string; spanId: string }[] {
  for (const body of otlp.bodies) {
    const request = JSON.parse(body) as {
      resourceSpans?: {
        scopeSpans?: {
          spans?: { spanId: string; links?: { traceId: string; spanId: string }[] }[];
        }[];
      }[];
    };
    for (const rs of request.resourceSpans ?? []) {
      for (const ss of rs.scopeSpans ?? []) {
        const span = ss.spans?.find((s) => s.spanId === spanId);
        if (span !== undefined) return span.links ?? [];
      }
    }
  }
  return [];
}

/**
 * Done-when 2 of issue 21: with tracing on (`concordance-worker start` exporting to an in-test
 * OTLP/HTTP receiver, `always_on`), an HL7 ADT over MLLP, a FHIR notification and a JSON update
 * (the engine's `traceparent` with it) each make one trace: the ingest server span, `redis.commit`,
 * `cgs.submit`, its polls and `webhook.deliver`, parented as the span plan says, and the webhook
 * request's `traceparent` names that trace and that delivery span. Nothing planted in the messages
 * (identifiers, names, a free-text note) is in any export body or any trace entry at rest.
 */
describe('OpenTelemetry traces end to end (concordance-worker start + simulator + receivers)', () => {
  let p: PipelineProcesses;
  let webhook: WebhookReceiver;
  let otlp: OtlpReceiver;
  let reader: MessageTraceReader;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    webhook = await startWebhookReceiver({ secret: SECRET });
    ({ p, reader } = await startThreeFeedsPipeline({
      apiKey: API_KEY,
      token: TOKEN,
      env: {
        WEBHOOK_URL: webhook.url,
        WEBHOOK_SECRET: SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_TRACES_SAMPLER: 'always_on',
        // Exported soon after they end: the test waits for their arrival, not for a timer.
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    }));
  });
  afterAll(async () => {
    await p.close();
    await webhook.close();
    await otlp.close();
  });

  /** The receipt and query of `controlId` once its webhook delivery has ended. */
  async function delivered(controlId: string) {
    const trace = await eventually(
      () => reader.byControlId(controlId),
      (t) => t.receipts[0]?.queries[0]?.delivery?.webhook_state === 'delivered',
      { timeoutMs: 60_000 },
    );
    const [receipt] = trace.receipts;
    const [query] = receipt?.queries ?? [];
    expect(receipt?.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(query?.trace?.event_id).toMatch(/.+/);
    return { traceId: receipt?.trace_id ?? '', eventId: query?.trace?.event_id ?? '' };
  }

  /** One trace from ingest to the webhook, parented as the span plan says; its ingest span. */
  async function expectOneTrace(traceId: string, eventId: string, ingestName: string) {
    const deliver = await spanWhere(
      otlp,
      (s) => s.name === 'webhook.deliver' && s.traceId === traceId,
    );
    const inTrace = (name: string) =>
      otlp.spans.filter((s) => s.traceId === traceId && s.name === name);
    const ingest = await spanWhere(otlp, (s) => s.traceId === traceId && s.name === ingestName);
    const commit = await spanWhere(otlp, (s) => s.traceId === traceId && s.name === 'redis.commit');
    const submit = await spanWhere(otlp, (s) => s.traceId === traceId && s.name === 'cgs.submit');
    expect(ingest.kind).toBe(KIND.server);
    expect(commit).toMatchObject({ kind: KIND.internal, parentSpanId: ingest.spanId });
    expect(submit).toMatchObject({ kind: KIND.client, parentSpanId: ingest.spanId });
    expect(submit.attributes).toMatchObject({
      'cw.ccsr_category': 'END002',
      'cw.outcome': 'submitted',
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
    });
    expect(submit.attributes['http.response.status_code']).toBeGreaterThanOrEqual(200);
    // The submission ran in a BullMQ job: its consumer span (the job's own trace) is linked.
    const [link] = linksOf(otlp, submit.spanId);
    expect(link?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(link?.traceId).not.toBe(traceId);
    const polls = inTrace('cgs.poll');
    expect(polls.length).toBeGreaterThanOrEqual(1);
    for (const poll of polls) {
      expect(poll).toMatchObject({ kind: KIND.client, parentSpanId: submit.spanId });
      expect(poll.attributes['cw.poll.attempt']).toBeGreaterThanOrEqual(1);
      expect(poll.attributes['http.response.status_code']).toBe(200);
    }
    expect(polls.map((s) => s.attributes['cw.outcome'])).toContain('success');
    const attempt = webhook.attempts.find((a) => a.webhookId === eventId);
    expect(deliver).toMatchObject({ kind: KIND.client, parentSpanId: submit.spanId });
    expect(deliver.attributes).toMatchObject({
      'cw.outcome': 'delivered',
      'cw.delivery.attempt': 1,
      'http.response.status_code': attempt?.status,
      'http.request.method': 'POST',
    });
    // The hospital's receiver continues the trace: the header names the delivery span.
    expect(attempt?.headers.traceparent).toBe(`00-${traceId}-${deliver.spanId}-01`);
    return ingest;
  }

  it('one trace per update, ingest to webhook, with no identifier in any span or trace entry', async () => {
    await sendThreeFeeds(p, FEEDS);

    const hl7 = await delivered(FEEDS.control.hl7);
    await expectOneTrace(hl7.traceId, hl7.eventId, 'hl7v2.mllp.message');
    const fhir = await delivered(FEEDS.control.fhir);
    await expectOneTrace(fhir.traceId, fhir.eventId, 'POST /v1/fhir/notifications');
    const fromEngine = await delivered(FEEDS.control.json);
    // The JSON update continues the engine's trace: its receipt names it.
    expect(fromEngine.traceId).toBe(ENGINE_TRACE);
    const ingest = await expectOneTrace(
      fromEngine.traceId,
      fromEngine.eventId,
      'POST /v1/record-updates',
    );
    expect(ingest.parentSpanId).toBe(ENGINE_SPAN);
    expect(new Set([hl7.traceId, fhir.traceId, fromEngine.traceId]).size).toBe(3);
    expect(otlp.rejected).toEqual([]);

    // Every raw export body: no planted identifier, name or free text.
    const bodies = otlp.bodies.join('\n');
    expect(bodies.length).toBeGreaterThan(0);
    for (const planted of PLANTED) expect(bodies).not.toContain(planted);

    // Every trace entry at rest (receipts, query and delivery traces with their `tp`): none either.
    const keys = await p.redis.keys(`${p.prefix}*:trace:*`);
    expect(keys.length).toBeGreaterThan(6);
    for (const key of keys) {
      const value = await traceEntryText(p.redis, key);
      for (const planted of PLANTED) expect(`${key} ${value}`).not.toContain(planted);
    }
  });
});
