import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageTrace, MessageTraceReader } from '../../../src/trace/message-trace-reader.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../tools/webhook-receiver.ts';
import { cli, jsonOf } from '../cli/support/run-cli.ts';
import { eventually } from '../../support/eventually.ts';
import type { PipelineProcesses } from '../../support/pipeline-processes.ts';
import { testRedisEnv } from '../../support/redis.ts';
import {
  sendThreeFeeds,
  plantedIn,
  startThreeFeedsPipeline,
  traceEntryText,
  type ThreeFeeds,
} from './support/three-feeds.ts';

const API_KEY = 'trace-e2e-api-key';
const TOKEN = 'trace-e2e-ingest-token-4k8d2m';
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/** Its planted identifiers: none may appear in a trace entry or in the command's output. */
const FEEDS: ThreeFeeds = {
  control: { hl7: 'TRC-ADT-0001', fhir: '4711', json: 'trc-json-0001' },
  hl7Mrn: 'TRCE2E7741',
  hl7Name: 'Quillfeather',
  fhirPatient: 'trce2e-fhir-5520',
  jsonPatient: 'TRCE2E-JSON-9031',
  ages: { hl7: 58, fhir: 64, json: 61 },
  tag: 'trc',
};

/**
 * Done-when 1 of issue 21: an HL7 ADT with a DG1 over MLLP, a FHIR notification and a JSON update go
 * through the real ingest and workers (`concordance-worker start`, the local service) to a real
 * webhook receiver; each message's trace, read with the `trace` command, holds every step in
 * order: answer, patient, queries, submission, polls, result, delivery.
 */
describe('message trace end to end (concordance-worker start + simulator + webhook receiver)', () => {
  let p: PipelineProcesses;
  let receiver: WebhookReceiver;
  let reader: MessageTraceReader;

  beforeAll(async () => {
    receiver = await startWebhookReceiver({ secret: SECRET });
    ({ p, reader } = await startThreeFeedsPipeline({
      apiKey: API_KEY,
      token: TOKEN,
      env: { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: SECRET },
    }));
  });
  afterAll(async () => {
    await p.close();
    await receiver.close();
  });

  /** The trace of `controlId` once its webhook delivery has ended. */
  const delivered = (controlId: string) =>
    eventually(
      () => reader.byControlId(controlId),
      (trace) =>
        trace.receipts[0]?.queries[0]?.delivery?.webhook_state === 'delivered' &&
        trace.receipts[0]?.queries[0]?.trace?.outcome !== undefined,
      { timeoutMs: 60_000 },
    );

  /** Every step's time, in the order the issue names them, for one message's one query. */
  function expectEveryStepInOrder(trace: MessageTrace, answer: string) {
    expect(trace.skipped).toBe(0);
    expect(trace.receipts).toHaveLength(1);
    const [receipt] = trace.receipts;
    expect(receipt).toMatchObject({ answer: { code: answer }, state: 'queued', has_raw: false });
    expect(receipt?.psid).toMatch(/.+/);
    expect(receipt?.version).toBeGreaterThan(0);
    expect(receipt?.queries).toHaveLength(1);
    const [query] = receipt?.queries ?? [];
    expect(query).toMatchObject({ category: 'END002', coalesced: false });
    const steps = query?.trace;
    const delivery = query?.delivery;
    expect(steps).toMatchObject({ outcome: 'completed', messages: 1, attempts: 1 });
    expect(steps?.remote_job_id).toMatch(/.+/);
    expect(steps?.job_id).toMatch(/.+/);
    expect(steps?.polls).toBeGreaterThanOrEqual(1);
    expect(delivery).toMatchObject({ webhook_state: 'delivered', webhook_attempts: 1 });
    const times = [
      receipt?.at,
      steps?.opened_at,
      steps?.queued_at,
      steps?.claimed_at,
      steps?.submitted_at,
      steps?.last_poll_at,
      steps?.ended_at,
      delivery?.webhook_first_at,
      delivery?.webhook_ended_at,
    ];
    expect(times.every((t) => typeof t === 'number')).toBe(true);
    const numbers = times as number[];
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    // The delivered event is the one the receiver acknowledged, with this query's id.
    expect(receiver.events.map((e) => e.webhookId)).toContain(steps?.event_id);
    return receipt?.psid ?? '';
  }

  it('each message: answer, patient, query, submission, polls, result and delivery, in order, with the trace command', async () => {
    await sendThreeFeeds(p, FEEDS);

    const psids = [
      expectEveryStepInOrder(await delivered(FEEDS.control.hl7), 'AA'),
      expectEveryStepInOrder(await delivered(FEEDS.control.fhir), '200'),
      expectEveryStepInOrder(await delivered(FEEDS.control.json), '202'),
    ];
    expect(new Set(psids).size).toBe(3);
    expect(receiver.events).toHaveLength(3);

    // The command, as an operator runs it: text (the steps in the order) and JSON.
    const env = { ...testRedisEnv(), REDIS_PREFIX: p.prefix, LOG_LEVEL: 'warn' };
    for (const controlId of Object.values(FEEDS.control)) {
      const [text, asJson] = await Promise.all([
        cli(['trace', controlId], env),
        cli(['trace', controlId, '--json'], env),
      ]);
      expect(text.code, text.stderr).toBe(0);
      const kinds = text.stdout
        .split('\n')
        .map((line) => /^\s+\S+\s+(\w+)\s/.exec(line)?.[1])
        .filter((kind) => kind !== undefined);
      expect(kinds).toEqual([
        'answer',
        'patient',
        'query',
        'submission',
        'poll',
        'result',
        'delivery',
      ]);
      expect(asJson.code).toBe(0);
      const parsed = jsonOf<MessageTrace>(asJson);
      expect(parsed.receipts[0]?.queries[0]?.trace?.outcome).toBe('completed');
      for (const planted of plantedIn(FEEDS)) {
        expect(text.stdout).not.toContain(planted);
        expect(asJson.stdout).not.toContain(planted);
      }
    }

    // At rest: every trace entry expires, and none holds a planted identifier.
    const keys = await p.redis.keys(`${p.prefix}*:trace:*`);
    expect(keys.length).toBeGreaterThan(6);
    for (const key of keys) {
      // Each entry expires: within the retention (7 days by default) of its last write.
      const ttl = await p.redis.ttl(key);
      expect(ttl, key).toBeGreaterThan(7 * 86_400 - 600);
      expect(ttl, key).toBeLessThanOrEqual(7 * 86_400);
      const value = await traceEntryText(p.redis, key);
      for (const planted of plantedIn(FEEDS)) {
        expect(`${key} ${value}`).not.toContain(planted);
      }
    }
  });
});
