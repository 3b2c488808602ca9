import { afterEach, describe, expect, it } from 'vitest';
import { queryTraceKey } from '../../../src/trace/trace-keys.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';
import {
  RULE_CATEGORY,
  startTraceHarness,
  TOKEN,
  type TraceHarness,
} from './support/ingest-trace-harness.ts';

const PATIENT = 'MRN-PLANTED-55719';
const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

let h: TraceHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function post(harness: TraceHarness, body: unknown, url = '/v1/record-updates') {
  return harness.app.inject({
    method: 'POST',
    url,
    headers: HEADERS,
    payload: JSON.stringify(body),
  });
}

const update = (eventId?: string) => ({
  patient_id: PATIENT,
  ...(eventId === undefined ? {} : { event_id: eventId }),
  source: 'mirth',
  assembled_patient: samplePatient,
});

describe('JSON record update receipts', () => {
  it('a stored update: receipt, query trace, counters; a resend is a duplicate', async () => {
    h = await startTraceHarness();
    const res = await post(h, update('evt-json-1'));
    expect(res.statusCode).toBe(202);
    const [receipt] = await h.receipts('evt-json-1');
    expect(receipt).toMatchObject({
      feed: 'json',
      sender: { application: 'mirth', facility: null },
      type: 'record-update',
      answer: { code: '202', error: null },
      state: 'queued',
      version: 1,
      queries: [{ category: RULE_CATEGORY, seq: 1, coalesced: false }],
    });
    expect(receipt?.psid).toBe(res.json<{ patient_service_id: string }>().patient_service_id);
    const psid = receipt?.psid ?? '';
    const q = await h.inspect.hgetall(
      queryTraceKey(h.composed.partitions.prefixOf(psid), psid, RULE_CATEGORY, 1),
    );
    expect(q).toMatchObject({ feed: 'json', messages: '1' });

    expect((await post(h, update('evt-json-1'))).statusCode).toBe(200);
    expect((await h.receipts('evt-json-1')).map((r) => r.state)).toEqual(['queued', 'duplicate']);
    expect(await h.feedCount('json', 'received')).toBe(2);
    expect(await h.feedCount('json', 'queued')).toBe(1);
  });

  it('an update without event_id is traced under the id its answer gives', async () => {
    h = await startTraceHarness();
    const res = await post(h, update());
    const eventId = res.json<{ event_id: string }>().event_id;
    expect((await h.receipts(eventId)).map((r) => r.state)).toEqual(['queued']);
  });

  it('a refused update (422) is counted errored and writes nothing: no receipt, no key', async () => {
    h = await startTraceHarness();
    const res = await post(h, { patient_id: PATIENT, event_id: 'evt-json-bad', source: 'mirth' });
    expect(res.statusCode).toBe(422);
    expect(await h.receipts('evt-json-bad')).toEqual([]);
    expect(await h.traceKeys()).toEqual([]);
    expect(await h.feedCount('json', 'received')).toBe(1);
    expect(await h.feedCount('json', 'errored')).toBe(1);
  });

  it('a batch: one receipt per item', async () => {
    h = await startTraceHarness();
    const other = { ...update('evt-b-2'), patient_id: 'MRN-PLANTED-55720' };
    const res = await post(h, [update('evt-b-1'), other], '/v1/record-updates/batch');
    expect(res.statusCode).toBe(202);
    expect((await h.receipts('evt-b-1'))[0]).toMatchObject({ feed: 'json', state: 'queued' });
    const [second] = await h.receipts('evt-b-2');
    expect(second?.queries).toEqual([{ category: RULE_CATEGORY, seq: 1, coalesced: false }]);
    expect(second?.psid).not.toBe((await h.receipts('evt-b-1'))[0]?.psid);
    expect(await h.feedCount('json', 'received')).toBe(2);
  });

  it('keep_raw: sealed; no patient id in any trace key; trace off writes none', async () => {
    h = await startTraceHarness({ trace: { keep_raw: true } });
    await post(h, update('evt-raw-1'));
    expect(
      (await post(h, { patient_id: PATIENT, event_id: 'evt-raw-2', assembled_patient: 'x' }))
        .statusCode,
    ).toBe(422);
    expect((await h.receipts('evt-raw-1'))[0]?.raw).toMatch(/.+/);
    expect(await h.receipts('evt-raw-2')).toEqual([]);
    const findings = await scanRedisFor(h.inspect, h.prefix, [PATIENT, 'Diabetes type 2']);
    expect(findings.filter((f) => f.key.includes(':trace:'))).toEqual([]);
    await h.close();

    h = await startTraceHarness({ trace: { enabled: false } });
    await post(h, update('evt-off-1'));
    expect((await post(h, { event_id: 'evt-off-2' })).statusCode).toBe(422);
    expect(await h.traceKeys()).toEqual([]);
    expect(await h.feedCount('json', 'errored')).toBe(1);
  });
});
