import { Queue } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from '../../../src/identity/crosswalk-keys.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { PatientAdmin } from '../../../src/privacy/patient-admin.ts';
import type { Partitions } from '../../../src/queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../../../src/queues/queue-names.ts';
import {
  receipt,
  seedDeliveredQuery,
  seedMessageWithQuery,
  seedReceipt,
  T0,
  TTL_S,
  twoPartitions,
} from '../trace/read-seed.ts';

const LOCAL_A = 'MRN-TRACE-ERASE-PLANTED-a1';

let env: Awaited<ReturnType<typeof twoPartitions>>['env'];
let partitions: Partitions;
let queues: Queue[];
let admin: PatientAdmin;
let psidA: string;
let psidB: string;
let p: string;

beforeEach(async () => {
  ({ env, partitions } = await twoPartitions());
  queues = partitions.prefixes.map(
    (prefix) => new Queue(CONCORDANCE_QUERIES, { connection: env.redis, prefix }),
  );
  admin = new PatientAdmin({
    redis: env.redis,
    prefix: partitions,
    keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
    queue: queues,
    logger: createLogger({ name: 'test', level: 'silent' }),
  });
  psidA = (await admin.crosswalk.resolve(LOCAL_A)).patientServiceId;
  p = partitions.prefixOf(psidA);
  // Another patient of the same partition: its receipts may share a list with A's.
  for (let i = 0; ; i++) {
    psidB = (await admin.crosswalk.resolve(`MRN-TRACE-OTHER-${i}`)).patientServiceId;
    if (partitions.prefixOf(psidB) === p) break;
  }

  // MSG-1: a control id two senders used, for A then for B (one list).
  await seedReceipt(env.redis, p, 'MSG-1', receipt({ psid: psidA, version: 1 }));
  await seedReceipt(env.redis, p, 'MSG-1', receipt({ at: T0 + 1_000, psid: psidB, version: 7 }));
  // MSG-2: A's alone, with a query that went to delivery.
  const query = { category: 'END002', seq: 1 };
  const msg2 = { at: T0 + 2_000, psid: psidA, version: 2 };
  await seedMessageWithQuery(env.redis, p, 'MSG-2', msg2, { ...query, eventId: 'EV-A' });
  // A query trace of A no receipt names any more (its receipts trimmed): found by the scan.
  await seedDeliveredQuery(env.redis, p, psidA, { category: 'END003', seq: 9, eventId: 'EV-A2' });
  // B's own message.
  const msg3 = { at: T0 + 3_000, psid: psidB, version: 8 };
  await seedMessageWithQuery(env.redis, p, 'MSG-3', msg3, { ...query, eventId: 'EV-B' });
});
afterEach(async () => {
  for (const queue of queues) await queue.close();
  await env.cleanup();
});

/** Every trace key of both partitions with its TTL. */
async function traceKeys(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const prefix of partitions.prefixes) {
    for (const key of await env.redis.keys(`${prefix.replace(/[{}]/g, (c) => `\\${c}`)}:trace:*`)) {
      out.set(key, await env.redis.ttl(key));
    }
  }
  return out;
}

/** A key's content as text, whatever its type. */
async function contentOf(key: string): Promise<string> {
  const type = await env.redis.type(key);
  if (type === 'list') return JSON.stringify(await env.redis.lrange(key, 0, -1));
  if (type === 'zset') return JSON.stringify(await env.redis.zrange(key, '0', '-1'));
  if (type === 'hash') return JSON.stringify(await env.redis.hgetall(key));
  return JSON.stringify(await env.redis.get(key));
}

async function expectOnlyBLeft(): Promise<void> {
  const keys = await traceKeys();
  expect([...keys.keys()].sort()).toEqual(
    [
      `${p}:trace:m:MSG-1`,
      `${p}:trace:m:MSG-3`,
      `${p}:trace:p:${psidB}`,
      `${p}:trace:q:${psidB}:END002:1`,
      `${p}:trace:e:EV-B`,
      `${p}:trace:recent`,
    ].sort(),
  );
  // Each kept its expiry.
  for (const [key, ttl] of keys) {
    expect(ttl, key).toBeGreaterThan(0);
    expect(ttl, key).toBeLessThanOrEqual(TTL_S);
  }
  const shared = (await env.redis.lrange(`${p}:trace:m:MSG-1`, 0, -1)).map(
    (text) => (JSON.parse(text) as { psid: string }).psid,
  );
  expect(shared).toEqual([psidB]);
  expect(await env.redis.zrange(`${p}:trace:recent`, '0', '-1')).toEqual(['MSG-1', 'MSG-3']);
  expect(await env.redis.zrange(`${p}:trace:p:${psidB}`, '0', '-1')).toEqual(['MSG-1', 'MSG-3']);
  for (const [key] of keys) {
    expect(key).not.toContain(psidA);
    expect(await contentOf(key)).not.toContain(psidA);
  }
  expect((await admin.traces.byPatient(psidA)).messages).toEqual([]);
  expect((await admin.traces.byPatient(psidB)).messages.map((m) => m.control_id)).toEqual([
    'MSG-3',
    'MSG-1',
  ]);
}

describe("purge and opt-out remove the patient's message trace", () => {
  it("purge: A's receipts, index, query and delivery traces and recent members go; B's stay with their expiry", async () => {
    expect((await traceKeys()).size).toBe(12);
    const report = await admin.purge(LOCAL_A, { actor: 'cli:tester' });
    // 2 receipts, 2 query traces, 2 delivery traces, the index.
    expect(report.counts.trace).toBe(7);
    await expectOnlyBLeft();
  });

  it('opt-out removes it too, and says how much in its audit entry', async () => {
    await admin.optOut(LOCAL_A, { actor: 'cli:tester', requestId: 'req-o' });
    await expectOnlyBLeft();
    const [entry] = await admin.audit.list();
    expect(entry).toMatchObject({ action: 'opt_out', counts: { trace: 7 }, request_id: 'req-o' });
  });
});
