import { afterEach, describe, expect, it } from 'vitest';
import { subscriptionHash } from '../../../src/ingest/fhir/event-tracker.ts';
import { queryTraceKey } from '../../../src/trace/trace-keys.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';
import { condition, r4Notification } from '../fhir/support/notifications.ts';
import {
  RULE_CATEGORY,
  startTraceHarness,
  TOKEN,
  type TraceHarness,
} from './support/ingest-trace-harness.ts';

const PATIENT = 'pat-planted-88412';
const SUBSCRIPTION = 'https://ehr.example.org/fhir/Subscription/trace-sub';
const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/fhir+json' };

let h: TraceHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function post(harness: TraceHarness, url: string, body: unknown) {
  return harness.app.inject({
    method: 'POST',
    url,
    headers: HEADERS,
    payload: JSON.stringify(body),
  });
}

const bundle = (id: string, resources: Record<string, unknown>[]) => ({
  resourceType: 'Bundle',
  id,
  type: 'collection',
  entry: resources.map((resource) => ({ resource })),
});

describe('FHIR receipts', () => {
  it('a notification event: its receipt under the event number, and the query trace', async () => {
    h = await startTraceHarness();
    const note = r4Notification({
      subscription: SUBSCRIPTION,
      type: 'event-notification',
      eventsSince: 7,
      events: [{ n: 7, focus: 'Condition/c-7' }],
      resources: [condition('c-7', PATIENT)],
    });
    expect((await post(h, '/v1/fhir/notifications', note)).statusCode).toBe(200);
    const [receipt] = await h.receipts('7');
    expect(receipt).toMatchObject({
      feed: 'fhir',
      sender: { application: subscriptionHash(SUBSCRIPTION), facility: null },
      type: 'notification',
      answer: { code: '200', error: null },
      state: 'queued',
      version: 1,
    });
    expect(receipt?.queries.map((q) => q.category)).toContain(RULE_CATEGORY);
    const psid = receipt?.psid ?? '';
    const q = await h.inspect.hgetall(
      queryTraceKey(h.composed.partitions.prefixOf(psid), psid, RULE_CATEGORY, 1),
    );
    expect(q).toMatchObject({ feed: 'fhir', messages: '1' });
    expect(await h.feedCount('fhir', 'received')).toBe(1);
    expect(await h.feedCount('fhir', 'queued')).toBe(receipt?.queries.length);
  });

  it('a Bundle of two patients: one receipt per commit under its id', async () => {
    h = await startTraceHarness();
    const res = await post(
      h,
      '/v1/fhir/Bundle',
      bundle('bundle-trace-1', [condition('c-1', PATIENT), condition('c-2', `${PATIENT}-b`)]),
    );
    expect(res.statusCode).toBe(202);
    const receipts = await h.receipts('bundle-trace-1');
    expect(receipts.map((r) => [r.type, r.state, r.answer.code])).toEqual([
      ['Bundle', 'queued', '202'],
      ['Bundle', 'queued', '202'],
    ]);
    expect(new Set(receipts.map((r) => r.psid)).size).toBe(2);
  });

  it('a refused Bundle (422) counts errored and writes nothing; a Bundle of unused types is filtered', async () => {
    h = await startTraceHarness();
    const bad = { resourceType: 'Bundle', id: 'bundle-bad', type: 'message', entry: [] };
    const res = await post(h, '/v1/fhir/Bundle', bad);
    expect(res.statusCode).toBe(422);
    expect(await h.receipts('bundle-bad')).toEqual([]);
    expect(await h.traceKeys()).toEqual([]);
    expect(await h.feedCount('fhir', 'errored')).toBe(1);

    const unused = bundle('bundle-unused', [{ resourceType: 'Basic', id: 'b-1' }]);
    expect((await post(h, '/v1/fhir/Bundle', unused)).statusCode).toBe(202);
    expect((await h.receipts('bundle-unused'))[0]).toMatchObject({ state: 'filtered' });
    expect(await h.feedCount('fhir', 'filtered')).toBe(1);
  });

  it('no patient id or name in any trace key (keep_raw on); trace off writes none', async () => {
    h = await startTraceHarness({ trace: { keep_raw: true } });
    await post(h, '/v1/fhir/Bundle', bundle('bundle-raw', [condition('c-1', PATIENT)]));
    expect((await h.receipts('bundle-raw'))[0]?.raw).toMatch(/.+/);
    const findings = await scanRedisFor(h.inspect, h.prefix, [PATIENT, 'Zanzibar Quixote']);
    expect(findings.filter((f) => f.key.includes(':trace:'))).toEqual([]);
    await h.close();

    h = await startTraceHarness({ trace: { enabled: false } });
    await post(h, '/v1/fhir/Bundle', bundle('bundle-off', [condition('c-1', PATIENT)]));
    await post(h, '/v1/fhir/Bundle', {
      resourceType: 'Bundle',
      id: 'bundle-off-bad',
      type: 'message',
    });
    expect(await h.traceKeys()).toEqual([]);
    expect(await h.feedCount('fhir', 'received')).toBe(2);
    expect(await h.feedCount('fhir', 'errored')).toBe(1);
  });
});
