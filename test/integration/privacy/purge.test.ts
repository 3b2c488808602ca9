import { once } from 'node:events';
import { Writable } from 'node:stream';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChangeDetector } from '../../../src/delivery/change-detector.ts';
import { OutboundQueueChannel } from '../../../src/delivery/outbound-queue-channel.ts';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import type { AssembledPatient } from '../../../src/interface/assembled-patient.ts';
import { IdempotencyStore } from '../../../src/ingest/idempotency-store.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { PatientAdmin } from '../../../src/privacy/patient-admin.ts';
import type { PatientEraser } from '../../../src/privacy/patient-eraser.ts';
import { auditPatientRef } from '../../../src/privacy/patient-reference.ts';
import { QueueJobEraser } from '../../../src/privacy/queue-job-eraser.ts';
import { UnknownPatientError } from '../../../src/privacy/unknown-patient-error.ts';
import { queryJobId } from '../../../src/queries/query-job.ts';
import { queryOutboxKey } from '../../../src/queries/query-outbox.ts';
import { QueryScheduler } from '../../../src/queries/query-scheduler.ts';
import { CONCORDANCE_QUERIES } from '../../../src/queues/queue-names.ts';
import { dumpRedis } from '../ingest/support/ingest-harness.ts';
import { ingestStack } from '../../support/ingest-stack.ts';
import { newOutboundKey } from '../../support/outbound.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';

const LOCAL = 'MRN-PURGE-PLANTED-51c9';
const CONTROL = 'MRN-CONTROL-PLANTED-77aa';
const NOTE = 'NOTE-PURGE-PLANTED-e41b';

let env: Awaited<ReturnType<typeof isolatedRedis>>;
let stack: Awaited<ReturnType<typeof ingestStack>>;
let admin: PatientAdmin;
let logLines: string[];
let queue: Queue;
let scheduler: QueryScheduler;
let detector: ChangeDetector;
let outbound: OutboundQueueChannel;
const closers: (() => Promise<unknown>)[] = [];

/** A store of the test's own, plugged in as other stores are (webhook events, dead letters). */
const extraStore = (): PatientEraser => ({
  name: 'extra_store',
  erase: (psid) => env.redis.del(`${env.prefix}:extra:${psid}`),
});

beforeEach(async () => {
  env = await isolatedRedis();
  stack = ingestStack({ redis: env.redis, prefix: env.prefix, debounceMs: 600_000 });
  queue = new Queue(CONCORDANCE_QUERIES, { connection: env.redis, prefix: env.prefix });
  // Long enough that opened queries stay in the due set for the whole test.
  scheduler = new QueryScheduler({ state: stack.state, debounceMs: 600_000 });
  logLines = [];
  outbound = new OutboundQueueChannel({
    connection: env.redis,
    prefix: env.prefix,
    name: 'concordance-results',
    retention: { count: 100, age_s: 3_600, waiting_age_s: 3_600 },
    key: newOutboundKey(),
  });
  const logger = createLogger({
    name: 'test',
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    }),
  });
  admin = new PatientAdmin({
    redis: env.redis,
    prefix: env.prefix,
    keys: stack.keys,
    queue: queue,
    logger,
    erasers: [extraStore(), new QueueJobEraser('outbound_events', outbound.queue, env.redis)],
  });
  detector = new ChangeDetector({ redis: env.redis, prefix: env.prefix, ignoreFields: [] });
});

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await outbound.close();
  await queue.close();
  await env.cleanup();
});

const record = (): AssembledPatient => ({
  nodes: [
    {
      id: 'n1',
      node_type: 'condition',
      notable: true,
      service_preferred_name: NOTE,
      coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }],
    },
  ],
  relationships: [],
  demographics: { age: 54, gender: 'female' },
});

const resultEvent = (psid: string): ResultEvent =>
  ({
    id: crypto.randomUUID(),
    type: 'concordance.completed',
    created_at: new Date().toISOString(),
    patient_id: null,
    patient_service_id: psid,
    ccsr_category: 'END002',
    record_version: 1,
    status: 'completed',
    concordance: { concordant: true },
    error: null,
  }) as unknown as ResultEvent;

/** A worker on the query queue that holds each job until `release()`. */
async function holdingWorker(): Promise<{ worker: Worker; release(): void }> {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  const worker = new Worker(
    CONCORDANCE_QUERIES,
    async (job: Job) => {
      if (job.data.hold === true) await held;
      return { summary: NOTE };
    },
    { connection, prefix: env.prefix, autorun: true },
  );
  closers.push(async () => {
    release();
    await worker.close();
    connection.disconnect();
  });
  return { worker, release };
}

/**
 * Everything a patient accumulates: crosswalk entry, sealed record, two presets, an opaque FHIR
 * id, an open (delayed) query, its query state, change-detection state, a finished query job
 * whose result the queue keeps, a remembered answer to an update, a result event waiting in the
 * outbound queue, and a key in the extra store.
 */
async function plant(localId: string, worker: Worker): Promise<string> {
  const { patientServiceId: psid } = await stack.crosswalk.resolve(localId);
  await stack.records.put(psid, record());
  await stack.presets.put(psid, 'END002', 'registered');
  await stack.presets.put(psid, 'CIR007', 'registered');
  await stack.crosswalk.opaqueFhirId(psid, `Condition/${localId}`);
  await scheduler.schedule(psid, 'END002', {
    eventId: `evt-${localId}`,
    at: '2026-11-20T08:00:00Z',
  });
  await detector.check(resultEvent(psid));
  await outbound.deliver(resultEvent(psid));
  const finished = once(worker, 'completed');
  await queue.add('query', { patientServiceId: psid }, { jobId: queryJobId(psid, 'CIR007', 1) });
  await finished;
  await env.redis.rpush(`${env.prefix}:extra:${psid}`, 'pending-event');
  await new IdempotencyStore({ redis: env.redis, prefix: env.prefix }).remember(
    psid,
    `evt-${localId}`,
    {
      patient_service_id: psid,
      status: 'accepted',
    },
  );
  return psid;
}

const mentioning = (dump: Map<string, string>, ...markers: string[]) =>
  [...dump].filter(([key, value]) => markers.some((m) => key.includes(m) || value.includes(m)));

describe('purge', () => {
  it('removes every key and value of the patient, leaves another patient as it was, and audits with an HMAC only', async () => {
    const { worker } = await holdingWorker();
    const psid = await plant(LOCAL, worker);
    const control = await plant(CONTROL, worker);
    await worker.close();

    const before = await dumpRedis(env.redis, env.prefix);
    expect(mentioning(before, psid).length).toBeGreaterThan(5);
    const controlBefore = new Map(mentioning(before, control));

    const report = await admin.purge(LOCAL, { actor: 'cli:tester', requestId: 'req-purge-1' });
    expect(report).toEqual({
      request_id: 'req-purge-1',
      kept: [],
      counts: {
        query_jobs: 2,
        queries_in_flight: 0,
        presets: 2,
        fhir_ids: 1,
        record: 1,
        query_states: 1,
        change_states: 1,
        extra_store: 1,
        outbound_events: 1,
        crosswalk: 1,
        idempotency: 1,
        queue_events: expect.any(Number),
        // The message trace's entries (docs/message-trace.md): its own test is trace-erase.test.ts.
        trace: expect.any(Number),
      },
    });
    expect(report.counts.queue_events).toBeGreaterThan(0);

    const after = await dumpRedis(env.redis, env.prefix);
    // Neither the local id nor the service id is anywhere: not in a key name, not in a value,
    // the audit stream and the queue's event stream included.
    expect(mentioning(after, psid, LOCAL)).toEqual([]);
    // The other patient's keys are exactly as they were (the queue's shared keys aside).
    const controlAfter = new Map(mentioning(after, control));
    expect([...controlAfter.keys()].sort()).toEqual([...controlBefore.keys()].sort());
    for (const key of controlBefore.keys()) {
      if (key.includes(`:${CONCORDANCE_QUERIES}:`) && !key.includes(control)) continue;
      // The due set is shared too: the other patient's query is still in it (below).
      if (key === queryOutboxKey(env.prefix)) continue;
      // Parsed: a hash's field order may change without its content changing (rehashing).
      expect(JSON.parse(controlAfter.get(key) ?? 'null'), key).toEqual(
        JSON.parse(controlBefore.get(key) ?? 'null'),
      );
    }
    expect(await stack.crosswalk.find(CONTROL)).toBe(control);
    expect((await stack.due()).map((d) => d.patientServiceId)).toEqual([control]);

    const audit = await admin.audit.list();
    expect(audit).toEqual([
      expect.objectContaining({
        action: 'purge',
        actor: 'cli:tester',
        outcome: 'done',
        patient_ref: auditPatientRef(stack.keys, LOCAL),
        counts: report.counts,
        request_id: 'req-purge-1',
      }),
    ]);
    expect(logLines.filter((l) => l.includes('"msg":"audit"'))).toHaveLength(1);
    for (const line of logLines) {
      expect(line).not.toContain(LOCAL);
      expect(line).not.toContain(psid);
    }
  });

  it('is idempotent: a second purge finds no patient (404 upstream), changes nothing and is audited', async () => {
    const { worker } = await holdingWorker();
    await plant(LOCAL, worker);
    await admin.purge(LOCAL, { actor: 'cli:tester' });
    const before = await dumpRedis(env.redis, env.prefix);
    const again = admin.purge(LOCAL, { actor: 'cli:tester', requestId: 'req-2' });
    await expect(again).rejects.toBeInstanceOf(UnknownPatientError);
    await expect(again).rejects.toMatchObject({ code: 'ERR_UNKNOWN_PATIENT', requestId: 'req-2' });
    const after = await dumpRedis(env.redis, env.prefix);
    after.delete(`${env.prefix}:audit`);
    before.delete(`${env.prefix}:audit`);
    expect(after).toEqual(before);
    expect((await admin.audit.list()).map((e) => [e.action, e.outcome, e.counts])).toEqual([
      ['purge', 'done', expect.any(Object)],
      ['purge', 'unknown_patient', {}],
    ]);
  });

  it('a later update of a purged patient is a new patient: new service id, no presets', async () => {
    const { worker } = await holdingWorker();
    const psid = await plant(LOCAL, worker);
    await admin.purge(LOCAL, { actor: 'cli:tester' });
    const { patientServiceId, created } = await stack.crosswalk.resolve(LOCAL);
    expect(created).toBe(true);
    expect(patientServiceId).not.toBe(psid);
    expect(await stack.presets.list(patientServiceId)).toEqual([]);
    expect(await stack.records.get(patientServiceId)).toBeUndefined();
  });

  it('keeps only the crosswalk entry and the opt-out of an opted-out patient, so later updates stay opted out', async () => {
    const { worker } = await holdingWorker();
    const psid = await plant(LOCAL, worker);
    await admin.optOut(LOCAL, { actor: 'cli:tester' });
    const report = await admin.purge(LOCAL, { actor: 'cli:tester' });
    expect(report.kept).toEqual(['crosswalk', 'opt_out']);
    expect(report.counts.crosswalk).toBe(0);

    const left = mentioning(await dumpRedis(env.redis, env.prefix), psid).map(([key]) => key);
    expect(left.sort()).toEqual(
      [
        `${env.prefix}:optout:${psid}`,
        `${env.prefix}:xw:${stack.keys.lookup(LOCAL)}`,
        `${env.prefix}:xwr:${psid}`,
      ].sort(),
    );
    expect((await stack.crosswalk.resolve(LOCAL)).patientServiceId).toBe(psid);
    expect(await admin.consent.isOptedOut(psid)).toBe(true);
  });
});

describe('opt-out', () => {
  it('cancels the queries that have not started, leaves a running one to its end, and is audited', async () => {
    const { worker, release } = await holdingWorker();
    const { patientServiceId: psid } = await stack.crosswalk.resolve(LOCAL);
    const waiting = await scheduler.schedule(psid, 'END002', {
      eventId: 'evt-1',
      at: '2026-11-20T08:00:00Z',
    });
    const active = once(worker, 'active');
    const runningId = queryJobId(psid, 'CIR007', 1);
    await queue.add('query', { hold: true }, { jobId: runningId });
    await active;

    const report = await admin.optOut(LOCAL, { actor: 'admin-token#1', requestId: 'req-o' });
    expect(report).toMatchObject({
      patient_service_id: psid,
      opted_out: true,
      queries_cancelled: 1,
      request_id: 'req-o',
    });
    expect(await env.redis.get(`${env.prefix}:optout:${psid}`)).toBe(report.opted_out_at);
    expect(await queue.getJobState(waiting.job_id)).toBe('unknown');
    expect(await queue.getJobState(runningId)).toBe('active');

    // A purge cannot remove the running job either: it reports it.
    const purged = await admin.purge(LOCAL, { actor: 'admin-token#1' });
    expect(purged.counts.queries_in_flight).toBe(1);
    const done = once(worker, 'completed');
    release();
    await done;

    const audit = await admin.audit.list();
    expect(audit[0]).toMatchObject({
      action: 'opt_out',
      actor: 'admin-token#1',
      outcome: 'done',
      counts: { opt_out: 1, queries_cancelled: 1, queries_in_flight: 1 },
      request_id: 'req-o',
    });
  });

  it('opt-in lifts it; opting in a patient never seen is refused and audited', async () => {
    await admin.optOut(LOCAL, { actor: 'cli:tester' });
    const psid = (await stack.crosswalk.find(LOCAL)) as string;
    expect(await admin.consent.isOptedOut(psid)).toBe(true);
    expect(await admin.optIn(LOCAL, { actor: 'cli:tester' })).toMatchObject({
      patient_service_id: psid,
      opted_out: false,
      was_opted_out: true,
    });
    expect(await env.redis.exists(`${env.prefix}:optout:${psid}`)).toBe(0);
    await expect(admin.optIn('MRN-NEVER-SEEN', { actor: 'cli:tester' })).rejects.toBeInstanceOf(
      UnknownPatientError,
    );
    expect(await stack.crosswalk.find('MRN-NEVER-SEEN')).toBeUndefined();
    expect((await admin.audit.list()).map((e) => [e.action, e.outcome])).toEqual([
      ['opt_out', 'done'],
      ['opt_in', 'done'],
      ['opt_in', 'unknown_patient'],
    ]);
  });
});
