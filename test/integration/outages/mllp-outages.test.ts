import { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import { testRedisUrl } from '../../support/redis.ts';
import { TcpProxy } from '../../../tools/tcp-proxy.ts';
import {
  fixture,
  frame,
  MllpClient,
  segmentOf,
  startHl7v2Harness,
  type Hl7v2Harness,
} from '../hl7v2/support/hl7v2-harness.ts';

interface MessageLine {
  msg: string;
  outcome?: string;
  ack?: string | null;
  transport?: string;
  status?: number;
}

const messageLines = (h: Hl7v2Harness) =>
  h.logs.lines.map((l) => JSON.parse(l) as MessageLine).filter((l) => l.msg === 'hl7v2 message');

/** A connection that the server closed at once yields `close` without any data. */
async function refusedAtOnce(port: number): Promise<boolean> {
  const socket = new Socket();
  socket.on('error', () => undefined);
  let data = false;
  socket.on('data', () => (data = true));
  socket.connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return !data;
}

describe('MLLP under outages', () => {
  let h: Hl7v2Harness | undefined;
  let proxy: TcpProxy | undefined;
  afterEach(async () => {
    await proxy?.forward();
    await h?.close();
    await proxy?.close();
    h = undefined;
    proxy = undefined;
  });

  it('a message not stored within handling_timeout_ms (hung Redis) gets no ACK, and the log says so', async () => {
    proxy = await TcpProxy.start(testRedisUrl());
    // The deadline is shorter than the command timeout: it is the deadline that answers.
    h = await startHl7v2Harness({ redisUrl: proxy.redisUrl, mllp: { handling_timeout_ms: 300 } });
    await proxy.hang();
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(fixture('LAB-ORU-2.hl7')));
    await client.closedPromise;
    expect(client.acks).toEqual([]);
    expect(messageLines(h)).toEqual([
      expect.objectContaining({ outcome: 'unavailable', ack: null, transport: 'mllp' }),
    ]);
    expect(h.logs.lines.some((l) => l.includes('Hl7v2DeadlineError'))).toBe(true);
    const metric = await h.registry.getSingleMetricAsString('cw_hl7v2_messages_total');
    expect(metric).toMatch(/type="ORU\^R01",outcome="unavailable"} 1/);
  });

  it('with transient_reply AR the deadline answers AR, and the log names that AR', async () => {
    proxy = await TcpProxy.start(testRedisUrl());
    h = await startHl7v2Harness({
      redisUrl: proxy.redisUrl,
      mllp: { handling_timeout_ms: 300 },
      hl7v2: { transient_reply: 'AR' },
    });
    await proxy.hang();
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(fixture('LAB-ORU-2.hl7')));
    const [ack] = await client.waitForAcks(1);
    client.socket.destroy();
    expect(segmentOf(ack ?? '', 'MSA')[1]).toBe('AR');
    expect(messageLines(h)).toEqual([
      expect.objectContaining({ outcome: 'unavailable', ack: 'AR', transport: 'mllp' }),
    ]);
  });

  it('over HTTP a transient failure is logged as a 503 without ACK', async () => {
    h = await startHl7v2Harness({ redisDown: true });
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: {
        authorization: 'Bearer hl7v2-test-token-0123456789',
        'content-type': 'text/plain',
      },
      payload: fixture('LAB-ORU-2.hl7'),
    });
    expect(response.statusCode).toBe(503);
    expect(messageLines(h)).toEqual([
      expect.objectContaining({
        outcome: 'unavailable',
        ack: null,
        transport: 'http',
        status: 503,
      }),
    ]);
  });

  it('holds at most max_connections connections; more are closed at once, counted and logged once', async () => {
    h = await startHl7v2Harness({ mllp: { max_connections: 2 } });
    const port = h.mllp.port;
    const held = [await MllpClient.open(port), await MllpClient.open(port)];
    await eventually(
      async () => h?.mllp.stats().connections,
      (n) => n === 2,
    );
    expect(await refusedAtOnce(port)).toBe(true);
    expect(await refusedAtOnce(port)).toBe(true);
    const metric = await h.registry.getSingleMetricAsString('cw_mllp_connections_refused_total');
    expect(metric).toMatch(/cw_mllp_connections_refused_total 2/);
    expect(h.logs.lines.filter((l) => l.includes('mllp connection refused'))).toHaveLength(1);

    // The held connections still work; once one ends, a new one is served.
    held[0]?.write(frame(fixture('LAB-ORU-2.hl7')));
    const [ack] = (await held[0]?.waitForAcks(1)) ?? [];
    expect(segmentOf(ack ?? '', 'MSA')[1]).toBe('AA');
    await held[1]?.end();
    await eventually(
      async () => h?.mllp.stats().connections,
      (n) => n === 1,
    );
    const fresh = await MllpClient.open(port);
    fresh.write(frame(fixture('LAB-ORU-2.hl7')));
    expect((await fresh.waitForAcks(1)).length).toBe(1);
    for (const c of [held[0], fresh]) c?.socket.destroy();
  });
});
