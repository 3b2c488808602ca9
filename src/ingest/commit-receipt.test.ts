import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { samplePatient } from '../../test/support/sample-patient.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import { Crosswalk } from '../identity/crosswalk.ts';
import { PresetStore } from '../presets/preset-store.ts';
import { optOutKey } from '../privacy/patient-consent.ts';
import { emptyClinicalRecord } from '../records/clinical-record.ts';
import { RecordStore } from '../records/record-store.ts';
import type { MessageReceipt } from '../trace/message-trace.ts';
import type { ReceiptHead } from '../trace/receipt-head.ts';
import { patientMessagesKey, queryTraceKey, receiptsKey } from '../trace/trace-keys.ts';
import { IdempotencyStore } from './idempotency-store.ts';
import { UpdateCommitter, type CommitInput } from './update-committer.ts';

const NOW = new Date('2026-11-20T08:00:00Z');

/** The commit scripts' receipts (lua/includes/commit-receipt.lua), on real Redis. */
describe('the commit records the message receipt', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let records: RecordStore;
  let crosswalk: Crosswalk;
  let committer: UpdateCommitter;

  beforeEach(async () => {
    env = await isolatedRedis();
    const { redis, prefix } = env;
    const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
    records = new RecordStore({ redis, prefix, keys });
    crosswalk = new Crosswalk({ redis, prefix, keys });
    const presets = new PresetStore({ redis, prefix });
    committer = new UpdateCommitter({
      redis,
      prefix,
      records,
      presets,
      idempotency: new IdempotencyStore({ redis, prefix, ttlSeconds: 3_600 }),
      debounceMs: 1_000,
      trace: { ttlSeconds: 86_400, maxReceipts: 5 },
    });
  });
  afterEach(() => env.cleanup());

  const head = (controlId: string): ReceiptHead => ({
    controlId,
    feed: 'json',
    at: NOW,
    sender: { application: 'mirth', facility: null },
    type: 'record-update',
    answer: { code: '202', error: null },
    traceId: null,
  });

  const newPatient = (localId: string, eventId: string, receipt?: ReceiptHead): CommitInput => {
    const plan = crosswalk.plan(localId);
    const psid = plan.patientServiceId;
    return {
      patientServiceId: psid,
      newPatient: plan,
      record: {
        kind: 'put',
        sealed: records.sealRecord(psid, samplePatient),
        contentHmac: records.contentHmac(psid, samplePatient),
      },
      eventId,
      now: NOW,
      extraCategories: ['END002', 'CIR007'],
      remember: true,
      receipt,
    };
  };

  const receipts = async (controlId: string) =>
    (await env.redis.lrange(receiptsKey(env.prefix, controlId), 0, -1)).map(
      (item) => JSON.parse(item) as MessageReceipt,
    );
  const traceKeys = () => env.redis.keys(`${env.prefix}:trace:*`);

  it('ok: queued, with each query and its trace hash; a resend: duplicate', async () => {
    const input = newPatient('MRN-1', 'evt-1', head('evt-1'));
    const result = await committer.commit(input);
    expect(result.status).toBe('ok');
    const psid = input.patientServiceId;
    expect(await receipts('evt-1')).toEqual([
      {
        at: NOW.getTime(),
        feed: 'json',
        sender: { application: 'mirth', facility: null },
        type: 'record-update',
        answer: { code: '202', error: null },
        trace_id: null,
        state: 'queued',
        psid,
        version: 1,
        queries: [
          { category: 'END002', seq: 1, coalesced: false },
          { category: 'CIR007', seq: 1, coalesced: false },
        ],
      },
    ]);
    expect(await env.redis.hgetall(queryTraceKey(env.prefix, psid, 'CIR007', 1))).toEqual({
      opened_at: String(NOW.getTime()),
      feed: 'json',
      messages: '1',
    });
    expect(await env.redis.zrange(patientMessagesKey(env.prefix, psid), '0', '-1')).toEqual([
      'evt-1',
    ]);

    const again = await committer.commit({ ...input, newPatient: undefined });
    expect(again.status).toBe('duplicate');
    const [, duplicate] = await receipts('evt-1');
    expect(duplicate).toMatchObject({ state: 'duplicate', psid, version: null, queries: [] });
  });

  it('opted out: stored, no query', async () => {
    const input = newPatient('MRN-2', 'evt-2', head('evt-2'));
    await env.redis.set(optOutKey(env.prefix, input.patientServiceId), '1');
    await committer.commit(input);
    expect(await receipts('evt-2')).toMatchObject([{ state: 'stored', version: 1, queries: [] }]);
  });

  it('a conflict (retried by the caller) and a commit without receipt write nothing', async () => {
    const first = newPatient('MRN-3', 'evt-3');
    await committer.commit(first);
    expect(await traceKeys()).toEqual([]);
    const psid = first.patientServiceId;
    const conflict = await committer.commit({
      patientServiceId: psid,
      record: {
        kind: 'clinical',
        sealed: records.sealClinical(psid, emptyClinicalRecord()),
        expectedVersion: 7,
      },
      eventId: 'evt-4',
      now: NOW,
      extraCategories: [],
      receipt: head('evt-4'),
    });
    expect(conflict.status).toBe('conflict');
    expect(await traceKeys()).toEqual([]);
  });

  it('commitMany: one receipt per item that has one', async () => {
    const a = newPatient('MRN-5', 'evt-5', head('evt-5'));
    const b = newPatient('MRN-6', 'evt-6');
    const c = newPatient('MRN-7', 'evt-7', head('evt-7'));
    const results = await committer.commitMany([a, b, c]);
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
    expect(await receipts('evt-5')).toMatchObject([{ state: 'queued', psid: a.patientServiceId }]);
    expect(await receipts('evt-6')).toEqual([]);
    expect(await receipts('evt-7')).toMatchObject([{ state: 'queued', psid: c.patientServiceId }]);
  });
});
