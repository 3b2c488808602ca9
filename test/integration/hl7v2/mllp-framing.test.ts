import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  controlIdOf,
  fixture,
  frame,
  MllpClient,
  segmentOf,
  startHl7v2Harness,
  withCr,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

const msa = (ack: string | undefined) => segmentOf(ack ?? '', 'MSA');

describe('MLLP framing', () => {
  let h: Hl7v2Harness;
  beforeAll(async () => {
    h = await startHl7v2Harness({ mllp: { max_message_bytes: 16_384, idle_timeout_ms: 200 } });
  });
  afterAll(async () => {
    await h.close();
  });

  it('reassembles a message split across many TCP writes', async () => {
    const client = await MllpClient.open(h.mllp.port);
    const bytes = frame(withCr(fixture('LAB-ORU-2.hl7')));
    // Every split point class: mid-segment, just before FS, between FS and CR.
    const cuts = [1, 7, 300, bytes.length - 2, bytes.length - 1];
    let from = 0;
    for (const cut of cuts) {
      client.write(bytes.subarray(from, cut));
      await new Promise((resolve) => client.socket.write('', resolve));
      from = cut;
    }
    client.write(bytes.subarray(from));
    const [ack] = await client.waitForAcks(1);
    expect(msa(ack)).toEqual(['MSA', 'AA', 'ControlID']);
    await client.end();
  });

  it('answers several messages in one write, in order, once each', async () => {
    const client = await MllpClient.open(h.mllp.port);
    const names = [
      'ADT-A01-01.hl7',
      'ORM-O01-01.hl7',
      'ADT-A40-01.hl7',
      'PC1-Problem-Add-v2.3.1.hl7',
    ];
    // Stray CR/LF between frames are ignored.
    client.write(Buffer.concat(names.flatMap((n) => [frame(fixture(n)), Buffer.from('\r\n')])));
    const acks = await client.waitForAcks(names.length);
    expect(acks.map((a) => msa(a)[2])).toEqual(names.map((n) => controlIdOf(fixture(n))));
    await client.end();
    expect(client.acks).toHaveLength(names.length);
  });

  it('serves two connections at once', async () => {
    const [a, b] = await Promise.all([MllpClient.open(h.mllp.port), MllpClient.open(h.mllp.port)]);
    a.write(frame(fixture('LAB-ORU-1.hl7')));
    b.write(frame(fixture('ADT-A08-01.hl7')));
    const [[ackA], [ackB]] = await Promise.all([a.waitForAcks(1), b.waitForAcks(1)]);
    expect(msa(ackA)[2]).toBe('182');
    expect(msa(ackB)[2]).toBe('MSG00001');
    await Promise.all([a.end(), b.end()]);
  });

  it('refuses an over-size frame with AR echoing MSH-10, then closes', async () => {
    const client = await MllpClient.open(h.mllp.port);
    const big = `${withCr(fixture('ADT-A40-01.hl7'))}\rNTE|1||${'x'.repeat(20_000)}`;
    client.write(frame(big));
    await client.closedPromise;
    expect(client.acks).toHaveLength(1);
    expect(msa(client.acks[0])).toEqual([
      'MSA',
      'AR',
      '8919-40',
      expect.stringContaining('larger'),
    ]);
  });

  it('closes an over-size frame without a readable MSH without answering', async () => {
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame('z'.repeat(20_000)));
    await client.closedPromise;
    expect(client.acks).toHaveLength(0);
  });

  it('answers a frame without a readable MSH with AR', async () => {
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame('hello'));
    const [ack] = await client.waitForAcks(1);
    expect(msa(ack)[1]).toBe('AR');
    await client.end();
  });

  it('closes an idle connection', async () => {
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(fixture('ADT-A40-01.hl7')));
    await client.waitForAcks(1);
    // Nothing more is sent: the server's idle timeout (200 ms) closes the connection.
    await client.closedPromise;
    expect(client.closed).toBe(true);
  });
});
