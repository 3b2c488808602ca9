import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { Partitions } from '../queues/partitions.ts';
import type { MessageReceipt } from './message-trace.ts';
import type { ReceiptHead } from './receipt-head.ts';
import { ReceiptWriter } from './receipt-writer.ts';
import {
  patientMessagesKey,
  receiptsKey,
  RECENT_MESSAGES_CAP,
  recentMessagesKey,
} from './trace-keys.ts';

const DAY_MS = 86_400_000;

/** The standalone script and its include (`lua/includes/record-receipt.lua`), on real Redis. */
describe('ReceiptWriter (record-receipt.lua)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  const settings = { ttlSeconds: 7 * 86_400, maxReceipts: 3 };

  beforeEach(async () => {
    env = await isolatedRedis();
  });
  afterEach(() => env.cleanup());

  const head = (controlId: string, at: number, code = 'AR'): ReceiptHead => ({
    controlId,
    feed: 'hl7v2-mllp',
    at: new Date(at),
    sender: { application: 'APP', facility: 'FAC' },
    type: 'ADT^A08',
    answer: { code, error: code === 'AA' ? null : '101' },
    traceId: null,
  });

  const listOf = async (key: string) =>
    (await env.redis.lrange(key, 0, -1)).map((item) => JSON.parse(item) as MessageReceipt);

  it('keeps the last max_receipts receipts of a control id, with its index entries and expiry', async () => {
    const writer = new ReceiptWriter({ redis: env.redis, prefix: env.prefix, settings });
    const now = Date.now();
    for (let i = 0; i < 5; i++) {
      expect(
        await writer.write(head('C-1', now + i, i === 4 ? 'AA' : 'AR'), {
          state: i === 4 ? 'unchanged' : 'filtered',
          ...(i === 4 ? { psid: 'psid-1', version: 3 } : {}),
        }),
      ).toBe(true);
    }
    const receipts = await listOf(receiptsKey(env.prefix, 'C-1'));
    expect(receipts.map((r) => r.at)).toEqual([now + 2, now + 3, now + 4]);
    expect(receipts[2]).toEqual({
      at: now + 4,
      feed: 'hl7v2-mllp',
      sender: { application: 'APP', facility: 'FAC' },
      type: 'ADT^A08',
      answer: { code: 'AA', error: null },
      state: 'unchanged',
      psid: 'psid-1',
      version: 3,
      queries: [],
      trace_id: null,
    });
    expect(await env.redis.zrange(patientMessagesKey(env.prefix, 'psid-1'), '0', '-1')).toEqual([
      'C-1',
    ]);
    expect(
      await env.redis.zscore(recentMessagesKey(env.prefix), 'C-1').then((s) => Number(s)),
    ).toBe(now + 4);
    for (const key of [
      receiptsKey(env.prefix, 'C-1'),
      patientMessagesKey(env.prefix, 'psid-1'),
      recentMessagesKey(env.prefix),
    ]) {
      const ttl = await env.redis.ttl(key);
      expect(ttl).toBeGreaterThan(settings.ttlSeconds - 60);
      expect(ttl).toBeLessThanOrEqual(settings.ttlSeconds);
    }
  });

  it('an unknown patient: no patient index; the partition its control id hashes to', async () => {
    const partitions = Partitions.of({ prefix: env.prefix, partitions: 4 });
    const writer = new ReceiptWriter({ redis: env.redis, prefix: partitions, settings });
    await writer.write(head('C-ORPHAN', Date.now()), { state: 'filtered' });
    const prefix = partitions.prefixOf('C-ORPHAN');
    expect(await listOf(receiptsKey(prefix, 'C-ORPHAN'))).toHaveLength(1);
    expect(await env.redis.zrange(recentMessagesKey(prefix), '0', '-1')).toEqual(['C-ORPHAN']);
    const keys = await env.redis.keys(`${env.prefix.slice(0, -1)}*:trace:p:*`);
    expect(keys).toEqual([]);
  });

  it('drops index members older than the retention and caps the recent set', async () => {
    const writer = new ReceiptWriter({ redis: env.redis, prefix: env.prefix, settings });
    const now = Date.now();
    const recent = recentMessagesKey(env.prefix);
    const args: (string | number)[] = [];
    for (let i = 0; i < RECENT_MESSAGES_CAP; i++) args.push(now - 1000 + i / 100, `old-${i}`);
    await env.redis.zadd(recent, ...args);
    await env.redis.zadd(recent, now - 8 * DAY_MS, 'expired');
    await env.redis.zadd(patientMessagesKey(env.prefix, 'psid-2'), now - 8 * DAY_MS, 'gone');
    await writer.write(head('C-NEW', now), { state: 'unchanged', psid: 'psid-2' });
    expect(await env.redis.zcard(recent)).toBe(RECENT_MESSAGES_CAP);
    expect(await env.redis.zscore(recent, 'expired')).toBeNull();
    expect(await env.redis.zscore(recent, 'old-0')).toBeNull();
    expect(await env.redis.zscore(recent, 'C-NEW')).not.toBeNull();
    expect(await env.redis.zrange(patientMessagesKey(env.prefix, 'psid-2'), '0', '-1')).toEqual([
      'C-NEW',
    ]);
  });

  it('a failed write is logged without identifiers and answered false, never thrown', async () => {
    const lines: unknown[] = [];
    const writer = new ReceiptWriter({
      redis: env.redis,
      prefix: env.prefix,
      settings,
      logger: { warn: (...args: unknown[]) => lines.push(args) } as never,
    });
    // A key of another type where the receipts list goes: the script fails.
    await env.redis.set(receiptsKey(env.prefix, 'C-BROKEN'), 'x');
    expect(await writer.write(head('C-BROKEN', Date.now()), { state: 'filtered' })).toBe(false);
    expect(lines).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain('C-BROKEN');
  });
});
