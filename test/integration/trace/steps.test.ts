import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config/config-schema.ts';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import {
  DeliveryTraceSchema,
  QueryTraceSchema,
  type DeliveryTrace,
  type QueryTrace,
} from '../../../src/trace/message-trace.ts';
import { deliveryTraceKey, queryTraceKey } from '../../../src/trace/trace-keys.ts';
import type { WebhookReceiver } from '../../../tools/webhook-receiver.ts';
import { eventually } from '../../support/eventually.ts';
import { sampleRecord, testConfig, type PipelineHarness } from '../../support/pipeline-harness.ts';
import {
  quickWebhook,
  startIngestWithWebhook,
  type IngestWithWebhook,
} from '../../support/pipeline-webhook.ts';

const TOKEN = 'trace-steps-test-ingest-token-0123456789';
const CATEGORY = 'END002';
const LOCAL_ID = 'MRN-TRACE-STEPS-1';

/**
 * One message followed from its ACK to the delivered webhook through the real pieces, as `start`
 * runs them (the composition root): the ingest app (the `json` feed), the outbox relay, the
 * submission worker and the poller against the local Clinical Graph Service, the delivery router
 * with the outbound queue and the webhook on, and the webhook worker against a real receiver.
 * Each step wrote its trace in the script it runs; the query's and its event's traces hold every
 * step, in order, and the per-feed counters count it `sent` and `delivered`.
 */
describe('the message trace of a query, step by step (ingest → queries → webhook)', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  function traceConfig(receiver: WebhookReceiver, secret: string): Config {
    const base = testConfig();
    return {
      ...base,
      ingest: { ...base.ingest, tokens: [TOKEN] },
      delivery: { ...base.delivery, webhook: quickWebhook(base, receiver.url, secret) },
      trace: { ...base.trace, enabled: true, retention_days: 7 },
    };
  }

  function start(): Promise<IngestWithWebhook> {
    // The first attempt fails: the webhook's retry is in the trace too.
    let answered = 0;
    return startIngestWithWebhook({
      config: traceConfig,
      connectionName: 'test-trace-webhook',
      closers,
      respond: () => (answered++ === 0 ? 503 : 204),
    });
  }

  async function feedCount(h: PipelineHarness, stage: string): Promise<number> {
    const metric = h.registry.getSingleMetric('cw_feed_messages_total');
    const values = (await metric?.get())?.values ?? [];
    return values.find((v) => v.labels.feed === 'json' && v.labels.stage === stage)?.value ?? 0;
  }

  it('holds opened ≤ queued ≤ claimed ≤ submitted ≤ last poll ≤ ended ≤ webhook end, and counts sent and delivered', async () => {
    const { h, r, url } = await start();
    const posted = await fetch(`${url}/v1/record-updates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        patient_id: LOCAL_ID,
        event_id: 'evt-trace-steps-1',
        source: 'trace-test',
        assembled_patient: sampleRecord('trace-steps'),
        ccsr_categories: [CATEGORY],
      }),
    });
    expect(posted.status).toBe(202);
    const { patient_service_id: psid } = (await posted.json()) as { patient_service_id: string };
    const prefix = h.partitions.prefixOf(psid);

    await r.until(() => r.events.length === 1);
    const event = r.events[0]?.payload as unknown as ResultEvent;
    expect(event).toMatchObject({ patient_service_id: psid, status: 'completed' });

    // The webhook's end is written in the same step that ends its delivery: wait for it.
    const delivery: DeliveryTrace = await eventually(
      async () =>
        DeliveryTraceSchema.parse(await h.redis.hgetall(deliveryTraceKey(prefix, event.id))),
      (d) => d.webhook_state === 'delivered',
    );
    const query: QueryTrace = QueryTraceSchema.parse(
      await h.redis.hgetall(queryTraceKey(prefix, psid, CATEGORY, 1)),
    );

    expect(query).toMatchObject({
      feed: 'json',
      messages: 1,
      job_id: expect.any(String),
      attempts: 1,
      remote_job_id: event.remote_job_id,
      outcome: 'completed',
      event_id: event.id,
    });
    expect(query.polls).toBeGreaterThanOrEqual(1);
    expect(query.error_code).toBeUndefined();
    const steps = [
      query.opened_at,
      query.queued_at,
      query.claimed_at,
      query.submitted_at,
      query.last_poll_at,
      query.ended_at,
      delivery.webhook_ended_at,
    ];
    expect(steps.every((t) => typeof t === 'number')).toBe(true);
    expect(steps).toEqual([...(steps as number[])].sort((a, b) => a - b));

    expect(delivery).toMatchObject({
      feed: 'json',
      webhook_attempts: 2,
      webhook_last_answer: '204',
      webhook_state: 'delivered',
    });
    // The outbound queue took it when it was handed over, before the webhook's first attempt.
    expect(delivery.outbound_at).toBeGreaterThanOrEqual(query.ended_at as number);
    expect(delivery.webhook_first_at).toBeGreaterThanOrEqual(query.ended_at as number);
    expect(delivery.unchanged_at).toBeUndefined();
    // Every trace key expires with the retention.
    const ttl = await h.redis.ttl(queryTraceKey(prefix, psid, CATEGORY, 1));
    expect(ttl).toBeGreaterThan(7 * 86_400 - 600);

    expect(await feedCount(h, 'sent')).toBe(1);
    // Delivered once per channel that took it: the outbound queue and the webhook (counted just
    // after the script that ended the delivery answered).
    expect(
      await eventually(
        () => feedCount(h, 'delivered'),
        (n) => n === 2,
      ),
    ).toBe(2);
  });
});
