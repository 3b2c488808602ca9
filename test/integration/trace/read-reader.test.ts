import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { partitionIndex, type Partitions } from '../../../src/queues/partitions.ts';
import { MessageTraceReader } from '../../../src/trace/message-trace-reader.ts';
import {
  receipt,
  seedDeliveredQuery,
  seedQuery,
  seedReceipt,
  T0,
  twoPartitions,
} from './read-seed.ts';

let env: Awaited<ReturnType<typeof twoPartitions>>['env'];
let partitions: Partitions;
let reader: MessageTraceReader;
let psidA: string;
let psidB: string;

beforeEach(async () => {
  ({ env, partitions } = await twoPartitions());
  reader = new MessageTraceReader({ redis: env.redis, space: partitions });
  psidA = partitions.drawPatientId(0);
  psidB = partitions.drawPatientId(1);
  const pa = partitions.prefixAt(0);
  const pb = partitions.prefixAt(1);
  const query = { category: 'END002', seq: 1 };

  // MSG-1: received, then resent (two receipts of A); another sender used it for B (partition 1).
  await seedReceipt(
    env.redis,
    pa,
    'MSG-1',
    receipt({ psid: psidA, version: 1, queries: [{ ...query, coalesced: false }] }),
  );
  await seedReceipt(
    env.redis,
    pb,
    'MSG-1',
    receipt({
      at: T0 + 30_000,
      psid: psidB,
      version: 4,
      state: 'stored',
      sender: { application: 'LAB', facility: null },
    }),
  );
  await seedReceipt(
    env.redis,
    pa,
    'MSG-1',
    receipt({ at: T0 + 60_000, psid: psidA, version: 1, state: 'duplicate' }),
  );
  // MSG-2 joined A's query (coalesced); its list also holds an entry that is not JSON, and it
  // names a query whose trace breaks the schema.
  await seedReceipt(env.redis, pa, 'MSG-2', 'not json{');
  await seedReceipt(
    env.redis,
    pa,
    'MSG-2',
    receipt({
      at: T0 + 120_000,
      psid: psidA,
      version: 2,
      type: 'ADT^A31',
      queries: [
        { ...query, coalesced: true },
        { category: 'END003', seq: 2, coalesced: false },
      ],
    }),
  );
  await seedDeliveredQuery(env.redis, pa, psidA, { ...query, eventId: 'EV-1', messages: 2 });
  await seedQuery(env.redis, pa, psidA, 'END003', 2, { opened_at: T0, feed: 'carrier-pigeon' });
  // MSG-R: refused before its patient was known, in the partition its control id hashes to.
  await seedReceipt(
    env.redis,
    partitions.prefixAt(partitionIndex('MSG-R', 2)),
    'MSG-R',
    receipt({
      at: T0 + 90_000,
      feed: 'fhir',
      type: 'Bundle',
      answer: { code: '200', error: null },
      state: 'filtered',
    }),
  );
});
afterEach(() => env.cleanup());

describe('MessageTraceReader', () => {
  it('byControlId: every receipt in every partition, oldest first, joined with query and delivery steps', async () => {
    const trace = await reader.byControlId('MSG-1');
    expect(trace.skipped).toBe(0);
    expect(trace.receipts.map((r) => [r.partition, r.at, r.psid, r.state])).toEqual([
      [0, T0, psidA, 'queued'],
      [1, T0 + 30_000, psidB, 'stored'],
      [0, T0 + 60_000, psidA, 'duplicate'],
    ]);
    const [first] = trace.receipts;
    expect(first?.has_raw).toBe(false);
    expect(first).not.toHaveProperty('raw');
    expect(first?.queries).toEqual([
      {
        category: 'END002',
        seq: 1,
        coalesced: false,
        trace: expect.objectContaining({
          outcome: 'completed',
          polls: 3,
          messages: 2,
          event_id: 'EV-1',
          remote_job_id: 'remote-1',
        }),
        delivery: expect.objectContaining({ webhook_state: 'delivered', webhook_attempts: 2 }),
      },
    ]);
  });

  it('a coalesced query shows under both messages; a malformed receipt or query trace is skipped and counted', async () => {
    const trace = await reader.byControlId('MSG-2');
    expect(trace.skipped).toBe(2);
    expect(trace.receipts).toHaveLength(1);
    const [shared, broken] = trace.receipts[0]?.queries ?? [];
    expect(shared?.coalesced).toBe(true);
    const first = (await reader.byControlId('MSG-1')).receipts[0]?.queries[0];
    expect(shared?.trace).toEqual(first?.trace);
    expect(shared?.delivery).toEqual(first?.delivery);
    expect(broken).toEqual({
      category: 'END003',
      seq: 2,
      coalesced: false,
      trace: null,
      delivery: null,
    });
  });

  it('an unknown control id has no receipt', async () => {
    expect(await reader.byControlId('NOPE')).toEqual({
      control_id: 'NOPE',
      receipts: [],
      skipped: 0,
    });
  });

  it("byPatient: the patient's control ids newest first, each with the patient's own receipts only", async () => {
    const a = await reader.byPatient(psidA);
    expect(a.messages.map((m) => [m.control_id, m.receipts.map((r) => r.at)])).toEqual([
      ['MSG-2', [T0 + 120_000]],
      ['MSG-1', [T0, T0 + 60_000]],
    ]);
    expect(a.skipped).toBe(2);
    const b = await reader.byPatient(psidB);
    expect(b.messages.map((m) => [m.control_id, m.receipts.map((r) => r.psid)])).toEqual([
      ['MSG-1', [psidB]],
    ]);
    expect((await reader.byPatient(psidA, { limit: 1 })).messages.map((m) => m.control_id)).toEqual(
      ['MSG-2'],
    );
    expect(await reader.byPatient(partitions.drawPatientId(1))).toEqual({
      messages: [],
      skipped: 0,
    });
  });

  it('recent: the newest messages across partitions, paged by time, of one feed when asked', async () => {
    const all = await reader.recent({ limit: 10 });
    expect(all.messages.map((m) => [m.control_id, m.partition, m.at, m.receipts])).toEqual([
      ['MSG-2', 0, T0 + 120_000, 2],
      ['MSG-R', partitionIndex('MSG-R', 2), T0 + 90_000, 1],
      ['MSG-1', 0, T0 + 60_000, 2],
      ['MSG-1', 1, T0 + 30_000, 1],
    ]);
    expect(all.next_before).toBeNull();
    expect(all.messages[0]?.latest).toMatchObject({ type: 'ADT^A31', has_raw: false });
    expect(all.messages[0]?.latest).not.toHaveProperty('raw');

    const page1 = await reader.recent({ limit: 2 });
    expect(page1.messages.map((m) => m.control_id)).toEqual(['MSG-2', 'MSG-R']);
    expect(page1.next_before).toBe(T0 + 90_000);
    const page2 = await reader.recent({ limit: 2, before: page1.next_before ?? undefined });
    expect(page2.messages.map((m) => [m.control_id, m.partition])).toEqual([
      ['MSG-1', 0],
      ['MSG-1', 1],
    ]);
    const fhir = await reader.recent({ limit: 10, feed: 'fhir' });
    expect(fhir.messages.map((m) => [m.control_id, m.latest.answer])).toEqual([
      ['MSG-R', { code: '200', error: null }],
    ]);
  });
});
