import { afterEach, describe, expect, it } from 'vitest';
import {
  MllpClient,
  segmentOf,
  sendOne,
  startHl7v2Harness,
  TOKEN,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

let h: Hl7v2Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const msa = (ack: string | undefined) => segmentOf(ack ?? '', 'MSA');

/** An ADT^A08 for one patient id, as text (encode it in the charset it declares). */
function adt(id: string, controlId: string, charset: string): string {
  return [
    `MSH|^~\\&|LAB|HOSP|CW|HOSP|20261123080000||ADT^A08^ADT_A01|${controlId}|P|2.5.1||||||${charset}`,
    'EVN|A08|20261123080000',
    `PID|1||${id}^^^^MR||MÜLLER^JÖRG||19620314|M`,
    'DG1|1||I10^Essential (primary) hypertension^I10||20250101|F',
    '',
  ].join('\r');
}

const crosswalkKeys = async (harness: Hl7v2Harness) =>
  (await harness.inspect.keys(`${harness.prefix}:xw:*`)).length;
const allKeys = async (harness: Hl7v2Harness) =>
  (await harness.inspect.keys(`${harness.prefix}*`)).sort();

describe('character sets over MLLP', () => {
  it('two ids that differ in one Latin-1 letter (MSH-18 8859/1) stay two patients', async () => {
    h = await startHl7v2Harness();
    const ue = Buffer.from(adt('MÜLLER1', 'C1', '8859/1'), 'latin1');
    const yacute = Buffer.from(adt('MÝLLER1', 'C2', '8859/1'), 'latin1');
    // The ids differ in exactly one byte: 0xDC against 0xDD.
    expect(ue.indexOf(Buffer.of(0x4d, 0xdc, 0x4c))).toBeGreaterThan(0);
    expect(yacute.indexOf(Buffer.of(0x4d, 0xdd, 0x4c))).toBeGreaterThan(0);

    expect(msa(await sendOne(h.mllp.port, ue)).slice(0, 3)).toEqual(['MSA', 'AA', 'C1']);
    expect(msa(await sendOne(h.mllp.port, yacute)).slice(0, 3)).toEqual(['MSA', 'AA', 'C2']);

    const first = await h.crosswalk.find('MÜLLER1');
    const second = await h.crosswalk.find('MÝLLER1');
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(first).not.toBe(second);
    expect(await crosswalkKeys(h)).toBe(2);
    expect(await h.crosswalk.find('M\uFFFDLLER1')).toBeUndefined();
    const a = await h.clinicalOf('MÜLLER1');
    const b = await h.clinicalOf('MÝLLER1');
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(a).not.toEqual(b);
  });

  it('Latin-1 bytes without MSH-18 under the UTF-8 default get AE and change nothing', async () => {
    h = await startHl7v2Harness();
    const before = await allKeys(h);
    const ack = await sendOne(h.mllp.port, Buffer.from(adt('MÜLLER1', 'C3', ''), 'latin1'));
    expect(msa(ack).slice(0, 3)).toEqual(['MSA', 'AE', 'C3']);
    expect(segmentOf(ack ?? '', 'ERR')[2]).toBe('MSH^1^18');
    expect(await allKeys(h)).toEqual(before);
    const metric = await h.registry.getSingleMetricAsString('cw_hl7v2_messages_total');
    expect(metric).toMatch(/type="ADT\^A08",outcome="rejected"} 1/);
  });

  it('bytes invalid in the declared set (ASCII with 0xDC) get AE and change nothing', async () => {
    h = await startHl7v2Harness();
    const before = await allKeys(h);
    const ack = await sendOne(h.mllp.port, Buffer.from(adt('MÜLLER1', 'C4', 'ASCII'), 'latin1'));
    expect(msa(ack)[1]).toBe('AE');
    expect(await allKeys(h)).toEqual(before);
  });

  it('an unsupported MSH-18 gets AE', async () => {
    h = await startHl7v2Harness();
    const before = await allKeys(h);
    const ack = await sendOne(h.mllp.port, adt('PLAIN1', 'C5', 'UNICODE UTF-16'));
    expect(msa(ack).slice(0, 3)).toEqual(['MSA', 'AE', 'C5']);
    expect(await allKeys(h)).toEqual(before);
  });

  it('an MSH-18 that is no character set name (DE, a country code one field off) gets AE, not the default', async () => {
    // HAPI falls back to its default with a warning only it sees; here the sender sees ERR at
    // MSH-18 on the first message, and nothing is decoded by guess.
    h = await startHl7v2Harness();
    const before = await allKeys(h);
    const ack = await sendOne(h.mllp.port, adt('PLAIN2', 'C9', 'DE'));
    expect(msa(ack).slice(0, 3)).toEqual(['MSA', 'AE', 'C9']);
    expect(segmentOf(ack ?? '', 'ERR')[2]).toBe('MSH^1^18');
    expect(await allKeys(h)).toEqual(before);
  });

  it('the listener default applies when MSH-18 is empty; the ACK goes back in that set', async () => {
    h = await startHl7v2Harness({
      hl7v2: { charset: { mllp_default: '8859/1', http_default: 'UNICODE UTF-8' } },
    });
    const text = adt('MÜLLER1', 'C6', '').replace('|LAB|HOSP|', '|LABÖ|HOSP|');
    const client = await MllpClient.open(h.mllp.port);
    const raw: Buffer[] = [];
    client.socket.on('data', (chunk: Buffer) => raw.push(chunk));
    client.write(
      Buffer.concat([Buffer.of(0x0b), Buffer.from(text, 'latin1'), Buffer.of(0x1c, 0x0d)]),
    );
    const [ack] = await client.waitForAcks(1);
    client.socket.destroy();
    expect(msa(ack)[1]).toBe('AA');
    expect(await h.crosswalk.find('MÜLLER1')).toBeDefined();
    // MSH-5 of the ACK echoes the sending application in Latin-1 (one byte 0xD6 for Ö).
    expect(Buffer.concat(raw).indexOf(Buffer.from('|LAB\xD6|', 'latin1'))).toBeGreaterThan(0);
  });

  it('windows-1252 and 8859/15 letters decode (€ is 0x80 and 0xA4)', async () => {
    h = await startHl7v2Harness();
    const w = adt('EUR€1', 'C7', 'windows-1252');
    expect(msa(await sendOne(h.mllp.port, Buffer.from(w.replace('€', '\x80'), 'latin1')))[1]).toBe(
      'AA',
    );
    const i = adt('EUR€1', 'C8', '8859/15');
    expect(msa(await sendOne(h.mllp.port, Buffer.from(i.replace('€', '\xA4'), 'latin1')))[1]).toBe(
      'AA',
    );
    expect(await crosswalkKeys(h)).toBe(1);
    expect(await h.crosswalk.find('EUR€1')).toBeDefined();
  });
});

describe('character sets over HTTP', () => {
  const post = (harness: Hl7v2Harness, body: Buffer, contentType: string) =>
    harness.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': contentType },
      payload: body,
    });

  it('reads the raw body by MSH-18 when Content-Type names no charset', async () => {
    h = await startHl7v2Harness();
    const response = await post(
      h,
      Buffer.from(adt('MÜLLER1', 'H1', '8859/1'), 'latin1'),
      'text/plain',
    );
    expect(response.statusCode).toBe(200);
    expect(msa(response.body)[1]).toBe('AA');
    expect(await h.crosswalk.find('MÜLLER1')).toBeDefined();
  });

  it('a Content-Type charset wins over MSH-18 (an engine that re-encoded the message)', async () => {
    h = await startHl7v2Harness();
    const response = await post(
      h,
      Buffer.from(adt('MÝLLER1', 'H2', '8859/1'), 'utf8'),
      'text/plain; charset=UTF-8',
    );
    expect(msa(response.body)[1]).toBe('AA');
    expect(await h.crosswalk.find('MÝLLER1')).toBeDefined();
  });

  it('undecodable bytes get AE (200) and change nothing', async () => {
    h = await startHl7v2Harness();
    const before = await allKeys(h);
    const response = await post(
      h,
      Buffer.from(adt('MÜLLER1', 'H3', ''), 'latin1'),
      'text/plain; charset=utf-8',
    );
    expect(response.statusCode).toBe(200);
    expect(msa(response.body)[1]).toBe('AE');
    expect(await allKeys(h)).toEqual(before);
  });

  it('uses the HTTP listener default when neither names a charset', async () => {
    h = await startHl7v2Harness({
      hl7v2: { charset: { mllp_default: 'UNICODE UTF-8', http_default: 'windows-1252' } },
    });
    const response = await post(h, Buffer.from(adt('MÜLLER1', 'H4', ''), 'latin1'), 'text/plain');
    expect(msa(response.body)[1]).toBe('AA');
    expect(await h.crosswalk.find('MÜLLER1')).toBeDefined();
  });
});
