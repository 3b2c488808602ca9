import { afterEach, describe, expect, it } from 'vitest';
import { queryTraceKey } from '../../../src/trace/trace-keys.ts';
import { frame, MllpClient, segmentOf } from '../hl7v2/support/hl7v2-harness.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';
import {
  RULE_CATEGORY,
  startTraceHarness,
  TOKEN,
  type TraceHarness,
} from './support/ingest-trace-harness.ts';

const MRN = 'MRN7731984';
const NAME = 'QUIXOTEZ';

function message(controlId: string, type = 'ADT^A08', pid = true): string {
  const segments = [
    `MSH|^~\\&|EPICADT|WESTHOSP|CW|CW|20240101120000||${type}|${controlId}|P|2.5.1`,
    'EVN|A08|20240101120000',
  ];
  if (pid) segments.push(`PID|||${MRN}^^^WEST^MR||${NAME}^TOM||19800530|M`);
  return `${segments.join('\r')}\r`;
}

async function send(h: TraceHarness, text: string): Promise<string> {
  const client = await MllpClient.open(h.mllp.port);
  client.write(frame(text));
  const [ack] = await client.waitForAcks(1);
  client.socket.destroy();
  return ack ?? '';
}

let h: TraceHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('HL7 v2 receipts (MLLP and HTTP)', () => {
  it('a stored message: its receipt, its query trace, the counters; a resend is unchanged', async () => {
    h = await startTraceHarness();
    const ack = await send(h, message('CTRL-STORED-1'));
    expect(segmentOf(ack, 'MSA')[1]).toBe('AA');
    const [receipt] = await h.receipts('CTRL-STORED-1');
    expect(receipt).toMatchObject({
      feed: 'hl7v2-mllp',
      sender: { application: 'EPICADT', facility: 'WESTHOSP' },
      type: 'ADT^A08',
      answer: { code: 'AA', error: null },
      state: 'queued',
      version: 1,
      queries: [{ category: RULE_CATEGORY, seq: 1, coalesced: false }],
      trace_id: null,
    });
    expect(receipt?.raw).toBeUndefined();
    const psid = receipt?.psid ?? '';
    expect(psid).toMatch(/.+/);
    const psidPrefix = h.composed.partitions.prefixOf(psid);
    const q = await h.inspect.hgetall(queryTraceKey(psidPrefix, psid, RULE_CATEGORY, 1));
    expect(q).toMatchObject({ feed: 'hl7v2-mllp', messages: '1' });
    expect(Number(q.opened_at)).toBe(receipt?.at);
    expect(await h.inspect.ttl(queryTraceKey(psidPrefix, psid, RULE_CATEGORY, 1))).toBeGreaterThan(
      0,
    );
    expect(await h.inspect.zrange(`${psidPrefix}:trace:p:${psid}`, '0', '-1')).toEqual([
      'CTRL-STORED-1',
    ]);
    expect(await h.inspect.zrange(`${psidPrefix}:trace:recent`, '0', '-1')).toContain(
      'CTRL-STORED-1',
    );

    // The same message again: the record as it was, its queries already opened.
    await send(h, message('CTRL-STORED-1'));
    const receipts = await h.receipts('CTRL-STORED-1');
    expect(receipts.map((r) => r.state)).toEqual(['queued', 'unchanged']);
    expect(receipts[1]).toMatchObject({ psid, version: 1, queries: [] });
    expect(await h.feedCount('hl7v2-mllp', 'received')).toBe(2);
    expect(await h.feedCount('hl7v2-mllp', 'queued')).toBe(1);
  });

  it('another message joins the open query: the query trace counts it', async () => {
    h = await startTraceHarness();
    await send(h, message('CTRL-J-1'));
    await send(h, message('CTRL-J-2').replace(`${NAME}^TOM`, `${NAME}^TOMMY`));
    const [second] = await h.receipts('CTRL-J-2');
    expect(second?.queries).toEqual([{ category: RULE_CATEGORY, seq: 1, coalesced: true }]);
    const psid = second?.psid ?? '';
    const psidPrefix = h.composed.partitions.prefixOf(psid);
    expect(
      await h.inspect.hget(queryTraceKey(psidPrefix, psid, RULE_CATEGORY, 1), 'messages'),
    ).toBe('2');
    expect(await h.feedCount('hl7v2-mllp', 'queued')).toBe(2);
  });

  it('a refused message (AE) counts errored and writes nothing: no receipt, no key', async () => {
    h = await startTraceHarness();
    const ack = await send(h, message('CTRL-REFUSED', 'ADT^A08', false));
    const code = segmentOf(ack, 'MSA')[1];
    expect(['AE', 'AR']).toContain(code);
    expect(await h.receipts('CTRL-REFUSED')).toEqual([]);
    expect(await h.traceKeys()).toEqual([]);
    expect(await h.feedCount('hl7v2-mllp', 'received')).toBe(1);
    expect(await h.feedCount('hl7v2-mllp', 'errored')).toBe(1);
  });

  it('a message of a type not used is filtered', async () => {
    h = await startTraceHarness();
    const ack = await send(h, message('CTRL-FILTERED', 'MFN^M02'));
    expect(segmentOf(ack, 'MSA')[1]).toBe('AA');
    const [receipt] = await h.receipts('CTRL-FILTERED');
    expect(receipt).toMatchObject({ state: 'filtered', type: 'MFN^M02', answer: { code: 'AA' } });
    expect(await h.feedCount('hl7v2-mllp', 'filtered')).toBe(1);
  });

  it('over HTTP the feed is hl7v2-http', async () => {
    h = await startTraceHarness();
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'x-application/hl7-v2+er7' },
      payload: message('CTRL-HTTP-1'),
    });
    expect(res.statusCode).toBe(200);
    const [receipt] = await h.receipts('CTRL-HTTP-1');
    expect(receipt).toMatchObject({ feed: 'hl7v2-http', state: 'queued' });
    expect(await h.feedCount('hl7v2-http', 'received')).toBe(1);
  });

  it('with keep_raw the receipt holds the message sealed; no identifier is in any trace key', async () => {
    h = await startTraceHarness({ trace: { keep_raw: true } });
    await send(h, message('CTRL-RAW-1'));
    await send(h, message('CTRL-RAW-2', 'ADT^A08', false));
    const [receipt] = await h.receipts('CTRL-RAW-1');
    expect(receipt?.raw).toMatch(/.+/);
    const traceKeys = await h.traceKeys();
    expect(traceKeys.length).toBeGreaterThan(3);
    const findings = await scanRedisFor(h.inspect, h.prefix, [MRN, NAME, 'EVN|A08']);
    expect(findings.filter((f) => f.key.includes(':trace:'))).toEqual([]);
  });

  it('trace off: no trace key, the counters still count', async () => {
    h = await startTraceHarness({ trace: { enabled: false } });
    await send(h, message('CTRL-OFF-1'));
    await send(h, message('CTRL-OFF-2', 'ADT^A08', false));
    expect(await h.traceKeys()).toEqual([]);
    expect(await h.feedCount('hl7v2-mllp', 'received')).toBe(2);
    expect(await h.feedCount('hl7v2-mllp', 'errored')).toBe(1);
  });
});
