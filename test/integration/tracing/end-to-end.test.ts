import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Partitions } from '../../../src/queues/partitions.ts';
import { MessageTraceReader } from '../../../src/trace/message-trace-reader.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../tools/webhook-receiver.ts';
import { condition, r4Notification } from '../fhir/support/notifications.ts';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';
import { eventually } from '../../support/eventually.ts';
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../../support/otlp-receiver.ts';
import {
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';
import { testPartitions } from '../../support/redis.ts';

const API_KEY = 'otel-e2e-api-key';
const TOKEN = 'otel-e2e-ingest-token-7q2w9e';
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/** Planted identifiers and free text: in no exported span and no trace entry at rest. */
const HL7_MRN = 'OTLE2E5512';
const HL7_NAME = 'Brambleworth';
const FHIR_PATIENT = 'otle2e-fhir-3307';
const JSON_PATIENT = 'OTLE2E-JSON-8124';
const NOTE = 'Planted free text: patient lives near the old mill';
const PLANTED = [HL7_MRN, HL7_NAME, FHIR_PATIENT, JSON_PATIENT, NOTE, 'old mill'];

const CONTROL = { hl7: 'OTL-ADT-0001', fhir: '5811', json: 'otl-json-0001' } as const;

/** OTLP span kinds (the enum of the protocol: the API's SpanKind + 1). */
const KIND = { internal: 1, server: 2, client: 3 } as const;

const ENGINE_TRACE = randomBytes(16).toString('hex');
const ENGINE_SPAN = randomBytes(8).toString('hex');

function adtWithDg1(): string {
  const born = `${new Date().getUTCFullYear() - 52}0703`;
  return [
    `MSH|^~\\&|EPIC|MAINHOSP|CW|MAINHOSP|20261120080000||ADT^A08^ADT_A01|${CONTROL.hl7}|P|2.5.1`,
    'EVN|A08|20261120080000',
    `PID|1||${HL7_MRN}^^^HOSP^MR||${HL7_NAME}^Ada||${born}|F`,
    `NTE|1||${NOTE}`,
    'DG1|1||E11.9^Type 2 diabetes mellitus without complications^I10||20260101|F',
  ].join('\r');
}

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
    p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      latency: '100-200',
      configLines: [
        'queries:',
        '  debounce_ms: 200',
        '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
        'presets:',
        '  rules: [{ ccsr_category: END002 }]',
        '  from_problem_list: { enabled: false, categories: outpatient_default }',
      ],
      env: {
        WEBHOOK_URL: webhook.url,
        WEBHOOK_SECRET: SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_TRACES_SAMPLER: 'always_on',
        // Exported soon after they end: the test waits for their arrival, not for a timer.
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    });
    reader = new MessageTraceReader({
      redis: p.redis,
      space: new Partitions(p.prefix, testPartitions()),
    });
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
    const ack = await sendOne(p.mllpPort, adtWithDg1());
    expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', CONTROL.hl7]);

    const note = await fetch(`${p.ingestUrl}/v1/fhir/notifications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(
        r4Notification({
          subscription: 'https://ehr.example.org/fhir/Subscription/sub-otel',
          type: 'event-notification',
          eventsSince: Number(CONTROL.fhir),
          events: [{ n: Number(CONTROL.fhir), focus: 'Condition/otl-c1' }],
          resources: [
            {
              resourceType: 'Patient',
              id: FHIR_PATIENT,
              gender: 'male',
              birthDate: `${new Date().getUTCFullYear() - 66}-09-21`,
            },
            condition('otl-c1', FHIR_PATIENT),
          ],
        }),
      ),
    });
    expect(note.status).toBe(200);

    const json = await fetch(`${p.ingestUrl}/v1/record-updates`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        traceparent: `00-${ENGINE_TRACE}-${ENGINE_SPAN}-01`,
      },
      body: JSON.stringify({
        patient_id: JSON_PATIENT,
        event_id: CONTROL.json,
        source: 'mirth',
        assembled_patient: {
          nodes: [
            {
              id: 'c1',
              node_type: 'condition',
              notable: true,
              coding: [
                { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9', display: NOTE },
              ],
            },
          ],
          relationships: [],
          demographics: { age: 59, gender: 'female' },
        },
      }),
    });
    expect(json.status).toBe(202);

    const hl7 = await delivered(CONTROL.hl7);
    await expectOneTrace(hl7.traceId, hl7.eventId, 'hl7v2.mllp.message');
    const fhir = await delivered(CONTROL.fhir);
    await expectOneTrace(fhir.traceId, fhir.eventId, 'POST /v1/fhir/notifications');
    const fromEngine = await delivered(CONTROL.json);
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
      const type = await p.redis.type(key);
      const value =
        type === 'list'
          ? (await p.redis.lrange(key, '0', '-1')).join('\n')
          : type === 'hash'
            ? JSON.stringify(await p.redis.hgetall(key))
            : JSON.stringify(await p.redis.zrange(key, '0', '-1'));
      for (const planted of PLANTED) expect(`${key} ${value}`).not.toContain(planted);
    }
  });
});
