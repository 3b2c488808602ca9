import { afterEach, describe, expect, it } from 'vitest';
import { QUERY_OUTCOMES } from '../../../src/interface/result-event.ts';
import type { FaultProfile } from '../../../src/simulator/fault-profile.ts';
import { loadSchemaValidators, SCHEMA_FILES } from '../../../tools/json-schemas.ts';
import { sampleRecord, testConfig } from '../../support/pipeline-harness.ts';
import {
  startPipelineWithWebhook,
  type PipelineWithWebhook,
} from '../../support/pipeline-webhook.ts';

/** One query per way a query ends, each with the faults of the local service that lead there. */
const SCENARIOS: {
  localId: string;
  category: string;
  faults: FaultProfile;
  expected: Record<string, unknown>;
}[] = [
  {
    localId: 'MRN-SCHEMA-COMPLETED',
    category: 'END002',
    faults: {},
    expected: { type: 'concordance.completed', status: 'completed', error: null },
  },
  {
    // An unknown category: the service answers 422 with validation items.
    localId: 'MRN-SCHEMA-REJECTED',
    category: 'XXX000',
    faults: {},
    expected: {
      type: 'concordance.failed',
      status: 'rejected',
      error: { code: 'ERR_SERVICE_VALIDATION', items: expect.any(Array) as unknown },
    },
  },
  {
    localId: 'MRN-SCHEMA-REFUSED',
    category: 'END002',
    faults: { routes: { 'POST /v1/concordance': { error_rate: 1, error_status: 400 } } },
    expected: { status: 'failed', error: { code: 'ERR_SERVICE_REQUEST' }, remote_job_id: null },
  },
  {
    localId: 'MRN-SCHEMA-REMOTE-FAILED',
    category: 'END002',
    faults: { job_failure_rate: 1 },
    expected: { status: 'failed', error: { code: 'ERR_REMOTE_JOB_FAILED' } },
  },
  {
    localId: 'MRN-SCHEMA-LOST',
    category: 'END002',
    faults: { job_loss_rate: 1 },
    expected: { status: 'lost', error: { code: 'ERR_REMOTE_JOB_LOST' } },
  },
  {
    localId: 'MRN-SCHEMA-TIMED-OUT',
    category: 'END002',
    faults: { never_finish_rate: 1 },
    expected: { status: 'timed_out', error: { code: 'ERR_QUERY_TIMED_OUT' } },
  },
];

/**
 * The checked-in JSON Schemas (docs/schemas/) against what the real pipeline sends: the query
 * workers against the local Clinical Graph Service, the delivery router and the webhook worker,
 * all built by the composition root, to a real receiver; every request it got is validated with
 * ajv (draft 2020-12, with formats).
 */
describe('the published JSON Schemas hold every real webhook delivery', () => {
  let pipeline: PipelineWithWebhook | undefined;
  afterEach(() => pipeline?.close());

  it('completed, rejected, failed, lost and timed-out results, first attempts and retries', async () => {
    const config = testConfig();
    // A short deadline, so that the query whose remote job never ends times out soon.
    const poll = { ...config.queries.poll, deadline_ms: 3_000 };
    const hook = (pipeline = await startPipelineWithWebhook({
      harness: { config: { ...config, queries: { ...config.queries, poll } } },
      // Every event's first attempt is answered 503: each is sent again, freshly signed.
      respond: (attempt) => (attempt.attemptOfId === 1 ? 503 : 204),
    }));
    const h = hook.harness;
    await h.startWorker(undefined, undefined, hook.router);
    for (const [i, scenario] of SCENARIOS.entries()) {
      await h.setFaults(scenario.faults);
      await h.update(scenario.localId, [scenario.category], sampleRecord(`schema-${i}`), `ev-${i}`);
      await h.untilOutcomes(i + 1);
    }
    await hook.receiver.until((r) => r.events.length === SCENARIOS.length);

    const validators = loadSchemaValidators();
    const payload = validators[SCHEMA_FILES.webhookPayload];
    const event = validators[SCHEMA_FILES.resultEvent];
    const headers = validators[SCHEMA_FILES.webhookHeaders];
    if (payload === undefined || event === undefined || headers === undefined) {
      throw new Error('a schema is missing');
    }
    const { attempts, events } = hook.receiver;
    expect(attempts.length).toBeGreaterThanOrEqual(2 * SCENARIOS.length);
    for (const attempt of attempts) {
      expect(attempt.verified).toBe(true);
      const body: unknown = JSON.parse(attempt.rawBody);
      expect(payload(body), payload.errorsText()).toBe(true);
      expect(event(body), event.errorsText()).toBe(true);
      expect(headers(attempt.headers), headers.errorsText()).toBe(true);
    }
    // Each query's event arrived (after its refused first attempt) and is the one it meant to be.
    for (const { localId, expected } of SCENARIOS) {
      const received = events.filter((e) => e.payload.patient_id === localId);
      expect(received, localId).toHaveLength(1);
      expect(received[0]?.payload).toMatchObject({ ...expected, changed: true });
      expect(attempts.filter((a) => a.webhookId === received[0]?.webhookId).length).toBe(2);
    }
    expect(new Set(events.map((e) => e.payload.status))).toEqual(new Set(QUERY_OUTCOMES));

    // The schemas are no formality: the same requests with one thing wrong fail them.
    const [first] = attempts;
    if (first === undefined) throw new Error('no attempt');
    const body = JSON.parse(first.rawBody) as Record<string, unknown>;
    const { changed: _changed, ...withoutChanged } = body;
    expect(payload(withoutChanged)).toBe(false);
    expect(payload({ ...body, status: 'done' })).toBe(false);
    expect(
      payload({ ...body, triggered_by: { ...(body.triggered_by as object), count: '1' } }),
    ).toBe(false);
    expect(headers({ ...first.headers, 'webhook-signature': `${first.signature} v1,x` })).toBe(
      false,
    );
    const { 'webhook-timestamp': _timestamp, ...withoutTimestamp } = first.headers;
    expect(headers(withoutTimestamp)).toBe(false);
  });
});
