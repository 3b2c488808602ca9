import { afterEach, describe, expect, it } from 'vitest';
import {
  fixture,
  frame,
  MllpClient,
  segmentOf,
  sendOne,
  startHl7v2Harness,
  TOKEN,
  withCr,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

const msa = (ack: string | undefined) => segmentOf(ack ?? '', 'MSA');
let h: Hl7v2Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function keysUnder(harness: Hl7v2Harness): Promise<string[]> {
  return harness.inspect.keys(`${harness.prefix}*`);
}

describe('messages the sender must fix (AE) change nothing', () => {
  it('no PID-3 MR identifier (a site whose rules accept only MR)', async () => {
    h = await startHl7v2Harness({
      hl7v2: {
        patient_id: {
          rules: [{ type_codes: ['MR'] }],
          fallback_fields: [],
          unqualified_authorities: [],
        },
      },
    });
    const before = await keysUnder(h);
    const text = fixture('ADT-A40-01.hl7')
      .replace('ADT^A40^ADT_A40', 'ADT^A08^ADT_A08')
      .replace('12345^^^BCBS^MR', '12345^^^BCBS^PI');
    const ack = await sendOne(h.mllp.port, text);
    expect(msa(ack).slice(0, 3)).toEqual(['MSA', 'AE', '8919-40']);
    expect(segmentOf(ack ?? '', 'ERR')[3]).toBe('101^Required field missing^HL70357');
    expect(await keysUnder(h)).toEqual(before);
  });

  it('a garbage segment', async () => {
    h = await startHl7v2Harness();
    const before = await keysUnder(h);
    const text = withCr(fixture('PC1-Problem-Add-v2.3.1.hl7')).replace(
      '\rPRB|',
      '\r%%garbage\rPRB|',
    );
    const ack = await sendOne(h.mllp.port, text);
    expect(msa(ack).slice(0, 3)).toEqual(['MSA', 'AE', '331']);
    expect(segmentOf(ack ?? '', 'ERR')[2]).toBe('SEG^3');
    expect(await keysUnder(h)).toEqual(before);
  });

  it('a missing MSH-10', async () => {
    h = await startHl7v2Harness();
    const before = await keysUnder(h);
    const ack = await sendOne(h.mllp.port, fixture('ADT-A40-01.hl7').replace('|8919-40|', '||'));
    expect(msa(ack)[1]).toBe('AE');
    expect(msa(ack)[2]).toBe('');
    expect(await keysUnder(h)).toEqual(before);
  });
});

describe('transient failure (Redis unreachable)', () => {
  it('MLLP: closes the connection without an ACK', async () => {
    h = await startHl7v2Harness({ redisDown: true });
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(fixture('LAB-ORU-2.hl7')));
    await client.closedPromise;
    expect(client.acks).toEqual([]);
    const metric = await h.registry.getSingleMetricAsString('cw_hl7v2_messages_total');
    expect(metric).toMatch(/type="ORU\^R01",outcome="unavailable"} 1/);
  });

  it('MLLP with transient_reply AR: answers AR', async () => {
    h = await startHl7v2Harness({ redisDown: true, hl7v2: { transient_reply: 'AR' } });
    const ack = await sendOne(h.mllp.port, fixture('LAB-ORU-2.hl7'));
    expect(msa(ack)[1]).toBe('AR');
    expect(msa(ack)[2]).toBe('ControlID');
  });

  it('HTTP: 503 with Retry-After', async () => {
    h = await startHl7v2Harness({ redisDown: true });
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      payload: fixture('LAB-ORU-2.hl7'),
    });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
  });
});

describe('POST /v1/hl7v2', () => {
  for (const contentType of ['text/plain', 'application/hl7-v2', 'x-application/hl7-v2+er7']) {
    it(`answers the ACK for ${contentType}`, async () => {
      h = await startHl7v2Harness();
      const response = await h.app.inject({
        method: 'POST',
        url: '/v1/hl7v2',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': contentType },
        payload: withCr(fixture('LAB-ORU-2.hl7')),
      });
      expect(response.statusCode).toBe(200);
      expect(msa(response.body)).toEqual(['MSA', 'AA', 'ControlID']);
      expect((await h.clinicalOf('1|10006579'))?.clinical?.items['hl7:obx:11125-2']?.value).toBe(
        220,
      );
    });
  }

  it('answers AE with 200', async () => {
    h = await startHl7v2Harness();
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain; charset=utf-8' },
      // No identifier in PID-2, PID-3 or PID-4: not even the default rules find a patient.
      payload: fixture('ORU-R01-01.hl7').replace(/^PID\|1\|\|[^|]*\|/m, 'PID|1|||'),
    });
    expect(response.statusCode).toBe(200);
    expect(msa(response.body)[1]).toBe('AE');
  });

  it('requires the bearer token', async () => {
    h = await startHl7v2Harness();
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { 'content-type': 'text/plain' },
      payload: fixture('LAB-ORU-2.hl7'),
    });
    expect(response.statusCode).toBe(401);
  });

  it('a resend changes nothing', async () => {
    h = await startHl7v2Harness();
    const send = () =>
      h?.app.inject({
        method: 'POST',
        url: '/v1/hl7v2',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
        payload: fixture('ADT-A01-01.hl7'),
      });
    await send();
    const first = await h.clinicalOf('test1|PATID1234');
    await send();
    const second = await h.clinicalOf('test1|PATID1234');
    expect(second?.version).toBe(first?.version);
  });
});
