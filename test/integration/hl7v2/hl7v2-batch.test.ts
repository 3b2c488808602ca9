import { once } from 'node:events';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ClinicalUpdates } from '../../../src/ingest/clinical-updates.ts';
import type { ClinicalUpdatesPort } from '../../../src/ingest/hl7v2/hl7v2-handler.ts';
import { startMllpServer, type MllpServer } from '../../../src/ingest/hl7v2/mllp-server.ts';
import { requestConnection } from '../../../src/queues/redis-connections.ts';
import { TcpProxy } from '../../../tools/tcp-proxy.ts';
import { eventually } from '../../support/eventually.ts';
import { ingestStack } from '../../support/ingest-stack.ts';
import { captureLogs } from '../../support/log-capture.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import {
  frame,
  MllpClient,
  startHl7v2Harness,
  TOKEN,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

let h: Hl7v2Harness | undefined;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const close of closers.splice(0).reverse()) await close();
});

function adt(id: string, controlId: string, charset = ''): string {
  return [
    `MSH|^~\\&|LAB|HOSP|CW|HOSP|20261123080000||ADT^A08^ADT_A01|${controlId}|P|2.5.1||||||${charset}`,
    'EVN|A08|20261123080000',
    `PID|1||${id}^^^^MR||DOE^JANE||19620314|F`,
    'DG1|1||I10^Essential (primary) hypertension^I10||20250101|F',
  ].join('\r');
}

/** FHS, BHS, the messages, BTS, FTS (CR between segments). */
function batchOf(messages: string[]): string {
  return [
    'FHS|^~\\&|LAB|HOSP|CW|HOSP|20261123080000||||FILE1',
    'BHS|^~\\&|LAB|HOSP|CW|HOSP|20261123080000||||BATCH1',
    ...messages,
    `BTS|${messages.length}`,
    'FTS|1',
    '',
  ].join('\r');
}

const segments = (ack: string, name: string) =>
  ack
    .split('\r')
    .filter((l) => l.startsWith(`${name}|`))
    .map((l) => l.split('|'));

describe('HL7 v2 batches', () => {
  it('MLLP: one frame, one batch of ACKs with one MSA per message, each message applied', async () => {
    h = await startHl7v2Harness();
    const text = batchOf([
      adt('BATCH-1', 'M1'),
      // No PID-3: this one is refused (AE) and changes nothing; the others go on.
      adt('BATCH-2', 'M2').replace('BATCH-2^^^^MR', ''),
      Buffer.from(adt('BÄTCH-3', 'M3', '8859/1'), 'utf8').toString('latin1'),
    ]);
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(Buffer.from(text, 'latin1')));
    const [ack] = await client.waitForAcks(1);
    await client.end();
    expect(client.acks).toHaveLength(1);
    expect(ack?.startsWith('FHS|^~\\&|CW|HOSP|LAB|HOSP|')).toBe(true);
    expect(segments(ack ?? '', 'FHS')[0]?.[11]).toBe('FILE1');
    expect(segments(ack ?? '', 'BHS')[0]?.[11]).toBe('BATCH1');
    expect(segments(ack ?? '', 'MSA').map((m) => m.slice(1, 3))).toEqual([
      ['AA', 'M1'],
      ['AE', 'M2'],
      ['AA', 'M3'],
    ]);
    expect(segments(ack ?? '', 'MSH')).toHaveLength(3);
    expect(segments(ack ?? '', 'BTS')).toEqual([['BTS', '3']]);
    expect(segments(ack ?? '', 'FTS')).toEqual([['FTS', '1']]);
    expect(await h.clinicalOf('BATCH-1')).toBeDefined();
    expect(await h.clinicalOf('BATCH-2')).toBeUndefined();
    // Message 3 was decoded by its own MSH-18 (8859/1): the UTF-8 bytes of Ä read as Latin-1.
    expect(await h.crosswalk.find('BÃ\u0084TCH-3')).toBeDefined();
  });

  it('an FS echoed from a malformed MSH-10 does not split the answer in two', async () => {
    h = await startHl7v2Harness();
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(Buffer.from(adt('FS-1', 'F1\x1c'), 'latin1')));
    client.write(frame(Buffer.from(batchOf([adt('FS-2', 'F2\x1c')]), 'latin1')));
    await client.end();
    expect(client.acks).toHaveLength(2);
    expect(segments(client.acks[0] ?? '', 'MSA')[0]?.slice(1, 3)).toEqual(['AA', 'F1']);
    expect(segments(client.acks[1] ?? '', 'MSA')[0]?.slice(1, 3)).toEqual(['AA', 'F2']);
  });

  it('HTTP: 200 with the batch of ACKs', async () => {
    h = await startHl7v2Harness();
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      payload: batchOf([adt('HTTP-1', 'H1'), adt('HTTP-2', 'H2')]),
    });
    expect(response.statusCode).toBe(200);
    expect(segments(response.body, 'MSA').map((m) => m.slice(1, 3))).toEqual([
      ['AA', 'H1'],
      ['AA', 'H2'],
    ]);
    expect(await h.clinicalOf('HTTP-1')).toBeDefined();
    expect(await h.clinicalOf('HTTP-2')).toBeDefined();
  });

  it('Redis down: MLLP closes without any ACK, HTTP answers 503', async () => {
    h = await startHl7v2Harness({ redisDown: true });
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(batchOf([adt('DOWN-1', 'D1'), adt('DOWN-2', 'D2')])));
    await client.closedPromise;
    expect(client.acks).toEqual([]);
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      payload: batchOf([adt('DOWN-1', 'D1')]),
    });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
  });

  it('storage failing on the second message: no batch ACK; the resent batch is answered in full', async () => {
    const env = await isolatedRedis();
    closers.push(() => env.cleanup());
    const proxy = await TcpProxy.start(testRedisUrl());
    closers.push(() => proxy.close());
    const redis = requestConnection(proxy.redisUrl, 'hl7v2-batch-test');
    redis.on('error', () => undefined);
    closers.push(async () => redis.disconnect());
    if (redis.status !== 'ready') await once(redis, 'ready');
    const { crosswalk, records, committer } = ingestStack({
      redis,
      prefix: env.prefix,
      debounceMs: 1_000,
    });
    const real = new ClinicalUpdates({
      crosswalk,
      records,
      committer,
      rules: [],
      problemList: { enabled: true, categories: 'all' },
    });
    // Redis goes away just before the second message of the first attempt is stored.
    let applies = 0;
    const changed: Record<string, boolean[]> = {};
    const updates: ClinicalUpdatesPort = {
      apply: async (update) => {
        applies += 1;
        if (applies === 2) await proxy.refuse();
        const result = await real.apply(update);
        (changed[update.localId] ??= []).push(result.changed);
        return result;
      },
      merge: (merge) => real.merge(merge),
    };
    const logs = captureLogs('trace');
    const harness = await startHl7v2Harness();
    closers.push(() => harness.close());
    const server: MllpServer = await startMllpServer({
      config: harness.config.hl7v2,
      updates,
      registry: new Registry(),
      logger: logs.logger,
      port: 0,
    });
    closers.push(() => server.close());
    const batch = frame(batchOf([adt('RESEND-1', 'R1'), adt('RESEND-2', 'R2')]));

    const first = await MllpClient.open(server.port);
    first.write(batch);
    await first.closedPromise;
    expect(first.acks).toEqual([]);
    expect(changed).toEqual({ 'RESEND-1': [true] });

    // Redis is back: the sender resends the whole batch on a new connection.
    await proxy.forward();
    await eventually(
      async () => redis.status,
      (status) => status === 'ready',
    );
    const second = await MllpClient.open(server.port);
    second.write(batch);
    const [ack] = await second.waitForAcks(1);
    await second.end();
    expect(segments(ack ?? '', 'MSA').map((m) => m.slice(1, 3))).toEqual([
      ['AA', 'R1'],
      ['AA', 'R2'],
    ]);
    // The message stored the first time commits nothing the second time.
    expect(changed).toEqual({ 'RESEND-1': [true, false], 'RESEND-2': [true] });
    expect(await crosswalk.find('RESEND-2')).toBeDefined();
  });
});
