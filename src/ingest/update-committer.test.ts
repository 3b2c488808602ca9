import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dueQueries, ingestStack } from '../../test/support/ingest-stack.ts';
import { isolatedRedis } from '../../test/support/redis.ts';
import { samplePatient } from '../../test/support/sample-patient.ts';
import { optOutKey } from '../privacy/patient-consent.ts';
import { emptyClinicalRecord } from '../records/clinical-record.ts';
import { Partitions } from '../queues/partitions.ts';
import { IdempotencyStore } from './idempotency-store.ts';
import { PresetStore } from '../presets/preset-store.ts';
import { RecordStore } from '../records/record-store.ts';
import { Crosswalk } from '../identity/crosswalk.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import {
  MAX_ITEMS_PER_SCRIPT,
  queriesAreFresh,
  UpdateCommitter,
  type CommitInput,
} from './update-committer.ts';

const NOW = new Date('2026-11-20T08:00:00Z');

describe('UpdateCommitter (real Redis): one script per message', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let stack: ReturnType<typeof ingestStack>;
  let registry: Registry;

  beforeEach(async () => {
    env = await isolatedRedis();
    registry = new Registry();
    stack = ingestStack({
      redis: env.redis,
      prefix: env.prefix,
      debounceMs: 2_000,
      retentionSeconds: 3_600,
      registry,
    });
  });
  afterEach(() => env.cleanup());

  const put = (psid: string, record = samplePatient) => ({
    kind: 'put' as const,
    sealed: stack.records.sealRecord(psid, record),
    contentHmac: stack.records.contentHmac(psid, record),
  });

  it('creates a new patient, its record, its queries and the event id together', async () => {
    const plan = stack.crosswalk.plan('MRN-1');
    const psid = plan.patientServiceId;
    const result = await stack.committer.commit({
      patientServiceId: psid,
      newPatient: plan,
      record: put(psid),
      eventId: 'evt-1',
      now: NOW,
      extraCategories: ['END002', 'CIR007'],
      remember: true,
    });
    expect(result).toEqual({
      status: 'ok',
      version: 1,
      optedOut: false,
      queries: [
        { ccsr_category: 'END002', job_id: `q-${psid}-END002-1`, coalesced: false },
        { ccsr_category: 'CIR007', job_id: `q-${psid}-CIR007-1`, coalesced: false },
      ],
    });
    expect(await stack.crosswalk.find('MRN-1')).toBe(psid);
    expect(await stack.crosswalk.localIdOf(psid)).toBe('MRN-1');
    expect((await stack.records.get(psid))?.record).toEqual(samplePatient);
    const due = await dueQueries(env.redis, env.prefix);
    expect(due.map((d) => [d.ccsrCategory, d.dueAt])).toEqual([
      ['CIR007', NOW.getTime() + 2_000],
      ['END002', NOW.getTime() + 2_000],
    ]);
    // The record and the query state expire after the retention; the crosswalk entry does not.
    expect(await env.redis.ttl(stack.records.keyOf(psid))).toBeGreaterThan(3_500);
    expect(await env.redis.ttl(`${env.prefix}:qs:${psid}:END002`)).toBeGreaterThan(3_500);
    expect(await env.redis.ttl(plan.forwardKey)).toBe(-1);

    // The same event id of the same patient is a duplicate with the first answer; nothing moves.
    const again = await stack.committer.commit({
      patientServiceId: psid,
      record: put(psid),
      eventId: 'evt-1',
      now: NOW,
      extraCategories: ['END005'],
      remember: true,
    });
    expect(again).toEqual({
      status: 'duplicate',
      answer: {
        event_id: 'evt-1',
        patient_service_id: psid,
        queries: (result as { queries: unknown[] }).queries,
      },
    });
    expect(await stack.records.version(psid)).toBe(1);
    // Every feed commits through here, so cw_queries_enqueued_total counts every feed's queries.
    const enqueued = await registry.getSingleMetricAsString('cw_queries_enqueued_total');
    expect(enqueued).toContain('cw_queries_enqueued_total{kind="new"} 2');
  });

  it('creates nothing for an update without a record of a patient without one', async () => {
    const plan = stack.crosswalk.plan('MRN-NONE');
    const result = await stack.committer.commit({
      patientServiceId: plan.patientServiceId,
      newPatient: plan,
      record: { kind: 'keep' },
      eventId: 'evt-1',
      now: NOW,
      extraCategories: ['END002'],
      remember: true,
    });
    expect(result).toEqual({ status: 'missing' });
    expect(await env.redis.keys(`${env.prefix}*`)).toEqual([]);
  });

  it('refuses a clinical record computed from a version that has moved on (conflict)', async () => {
    const plan = stack.crosswalk.plan('MRN-C');
    const psid = plan.patientServiceId;
    const clinical = (expectedVersion: number) => ({
      kind: 'clinical' as const,
      sealed: stack.records.sealClinical(psid, emptyClinicalRecord()),
      expectedVersion,
    });
    const base = { patientServiceId: psid, eventId: 'hl7v2:a:1', now: NOW, extraCategories: [] };
    expect(
      await stack.committer.commit({ ...base, newPatient: plan, record: clinical(0) }),
    ).toMatchObject({ status: 'ok', version: 1 });
    expect(await stack.committer.commit({ ...base, record: clinical(0) })).toEqual({
      status: 'conflict',
    });
    expect(await stack.records.version(psid)).toBe(1);
  });

  it('does not take over a local id another writer created meanwhile (conflict)', async () => {
    const first = stack.crosswalk.plan('MRN-RACE');
    const second = stack.crosswalk.plan('MRN-RACE');
    const commit = (plan: typeof first) =>
      stack.committer.commit({
        patientServiceId: plan.patientServiceId,
        newPatient: plan,
        record: put(plan.patientServiceId),
        eventId: 'e',
        now: NOW,
        extraCategories: ['END002'],
      });
    expect(await commit(first)).toMatchObject({ status: 'ok' });
    expect(await commit(second)).toEqual({ status: 'conflict' });
    expect(await stack.crosswalk.find('MRN-RACE')).toBe(first.patientServiceId);
    expect(await stack.records.version(second.patientServiceId)).toBe(0);
  });

  it('stores the record of an opted-out patient but opens no query', async () => {
    const plan = stack.crosswalk.plan('MRN-OUT');
    const psid = plan.patientServiceId;
    await env.redis.set(optOutKey(env.prefix, psid), NOW.toISOString());
    const result = await stack.committer.commit({
      patientServiceId: psid,
      newPatient: plan,
      record: put(psid),
      eventId: 'e',
      now: NOW,
      extraCategories: ['END002'],
    });
    expect(result).toEqual({ status: 'ok', version: 1, optedOut: true, queries: [] });
    expect(await dueQueries(env.redis, env.prefix)).toEqual([]);
  });

  it('keeps problem-list presets in step with the record, never touching registered ones', async () => {
    const plan = stack.crosswalk.plan('MRN-PL');
    const psid = plan.patientServiceId;
    await stack.presets.put(psid, 'CIR007', 'registered', NOW);
    const commit = (problemList: string[], version: number) =>
      stack.committer.commit({
        patientServiceId: psid,
        ...(version === 0 ? { newPatient: plan } : {}),
        record: {
          kind: 'clinical',
          sealed: stack.records.sealClinical(psid, emptyClinicalRecord()),
          expectedVersion: version,
        },
        eventId: `e${version}`,
        now: NOW,
        problemList,
        extraCategories: [],
      });
    await commit(['END002', 'END005'], 0);
    expect((await stack.presets.list(psid)).map((p) => [p.ccsr_category, p.source])).toEqual([
      ['CIR007', 'registered'],
      ['END002', 'problem_list'],
      ['END005', 'problem_list'],
    ]);
    const result = await commit(['END002'], 1);
    expect((await stack.presets.list(psid)).map((p) => p.ccsr_category)).toEqual([
      'CIR007',
      'END002',
    ]);
    expect(result).toMatchObject({
      queries: [
        { ccsr_category: 'CIR007', coalesced: true },
        { ccsr_category: 'END002', coalesced: true },
      ],
    });
  });

  it('merges: the presets of the prior patient move to the survivor and its record goes', async () => {
    const prior = stack.crosswalk.plan('MRN-OLD');
    const survivor = stack.crosswalk.plan('MRN-NEW');
    const clinical = (psid: string) => ({
      kind: 'clinical' as const,
      sealed: stack.records.sealClinical(psid, emptyClinicalRecord()),
      expectedVersion: 0,
    });
    await stack.committer.commit({
      patientServiceId: prior.patientServiceId,
      newPatient: prior,
      record: clinical(prior.patientServiceId),
      eventId: 'e1',
      now: NOW,
      extraCategories: [],
    });
    await stack.presets.put(prior.patientServiceId, 'RSP009', 'registered', NOW);
    const result = await stack.committer.commit({
      patientServiceId: survivor.patientServiceId,
      newPatient: survivor,
      record: clinical(survivor.patientServiceId),
      eventId: 'e2',
      now: NOW,
      extraCategories: [],
      merge: { priorPatientServiceId: prior.patientServiceId, priorExpectedVersion: 1 },
    });
    expect(result).toMatchObject({
      status: 'ok',
      queries: [{ ccsr_category: 'RSP009', coalesced: false }],
    });
    expect(await stack.presets.list(prior.patientServiceId)).toEqual([]);
    expect((await stack.records.get(prior.patientServiceId))?.clinical).toBeUndefined();
  });

  it('opens no query for the same record again, unless presets changed or its queries never opened', async () => {
    const plan = stack.crosswalk.plan('MRN-SAME');
    const psid = plan.patientServiceId;
    const commit = (
      eventId: string,
      extra: Partial<Parameters<typeof stack.committer.commit>[0]> = {},
    ) =>
      stack.committer.commit({
        patientServiceId: psid,
        record: put(psid),
        eventId,
        now: NOW,
        extraCategories: [],
        remember: true,
        ...extra,
      });
    // Opted out at first: the record is stored, its queries never open.
    await env.redis.set(optOutKey(env.prefix, psid), NOW.toISOString());
    await stack.presets.put(psid, 'END002', 'registered', NOW);
    expect(await commit('e1', { newPatient: plan })).toMatchObject({ status: 'ok', queries: [] });
    await env.redis.del(optOutKey(env.prefix, psid));
    // The same record: its queries never opened for this version, so they open now.
    expect(await commit('e2')).toMatchObject({
      status: 'ok',
      version: 1,
      queries: [{ ccsr_category: 'END002', coalesced: false }],
    });
    // The same record again: nothing to do, and the event id is remembered as accepted.
    expect(await commit('e3')).toEqual({ status: 'unchanged', version: 1 });
    expect(await commit('e3')).toMatchObject({ status: 'duplicate', answer: { queries: [] } });
    expect(await registry.getSingleMetricAsString('cw_updates_unchanged_total')).toContain(
      'cw_updates_unchanged_total 1',
    );
    // A preset added since: the same record opens queries again.
    await stack.presets.put(psid, 'CIR007', 'registered', NOW);
    expect(await commit('e4')).toMatchObject({
      status: 'ok',
      queries: [
        { ccsr_category: 'CIR007', coalesced: false },
        { ccsr_category: 'END002', coalesced: true },
      ],
    });
    // A different record always counts.
    expect(
      await commit('e5', { record: put(psid, { ...samplePatient, demographics: { age: 58 } }) }),
    ).toMatchObject({ status: 'ok', version: 2 });
    expect(await stack.records.version(psid)).toBe(2);
    // Every update stored counts for the feed-silence signal (e1, e2, e3, e4, e5), a duplicate not.
    expect(await registry.getSingleMetricAsString('cw_record_updates_stored_total')).toContain(
      'cw_record_updates_stored_total 5',
    );
  });

  it('queriesAreFresh(storedState) says exactly what the script would answer (unchanged or not)', async () => {
    const plan = stack.crosswalk.plan('MRN-FRESH');
    const psid = plan.patientServiceId;
    const retired = stack.crosswalk.retiredKeyOf(psid);
    const clinical = (version: number) => ({
      kind: 'clinical' as const,
      sealed: stack.records.sealClinical(psid, emptyClinicalRecord()),
      expectedVersion: version,
    });
    let n = 0;
    // The fast answer first, then the script's answer to a 'keep' of the same record.
    const both = async (problemList: string[] | undefined, extra: string[] = []) => {
      const state = await stack.committer.storedState(psid, retired);
      const fresh = queriesAreFresh(state, problemList, extra);
      const result = await stack.committer.commit({
        patientServiceId: psid,
        record: { kind: 'keep' },
        onlyIfStale: true,
        eventId: `k${(n += 1)}`,
        now: NOW,
        extraCategories: extra,
        ...(problemList === undefined ? {} : { problemList }),
      });
      return { fresh, script: result.status };
    };
    await stack.presets.put(psid, 'END002', 'registered', NOW);
    await stack.committer.commit({
      patientServiceId: psid,
      newPatient: plan,
      record: clinical(0),
      eventId: 'e1',
      now: NOW,
      extraCategories: [],
      problemList: ['CIR007'],
    });
    // Opened for END002 (registered) and CIR007 (problem list) on version 1.
    expect(await both(['CIR007'])).toEqual({ fresh: true, script: 'unchanged' });
    // The problem list of the record names a category with no preset yet.
    expect(await both(['CIR007', 'RSP009'])).toEqual({ fresh: false, script: 'ok' });
    expect(await both(['CIR007', 'RSP009'])).toEqual({ fresh: true, script: 'unchanged' });
    // A problem-list preset the record no longer names is removed by the script.
    expect(await both(['CIR007'])).toEqual({ fresh: false, script: 'ok' });
    expect(await both(['CIR007'])).toEqual({ fresh: true, script: 'unchanged' });
    // Without problem-list presets (disabled), the presets are as they are.
    expect(await both(undefined)).toEqual({ fresh: true, script: 'unchanged' });
    // A registered preset added since.
    await stack.presets.put(psid, 'ABC001', 'registered', NOW);
    expect(await both(['CIR007'])).toEqual({ fresh: false, script: 'ok' });
    // Extra categories (preset rules) join the fingerprint after the sorted presets.
    expect(await both(['CIR007'], ['MBD002'])).toEqual({ fresh: false, script: 'ok' });
    expect(await both(['CIR007'], ['MBD002'])).toEqual({ fresh: true, script: 'unchanged' });
    expect(await both(['CIR007'], ['END002'])).toEqual({ fresh: false, script: 'ok' });
    // Categories sort by bytes, as Lua's table.sort does ('Z' before 'a').
    await stack.presets.put(psid, 'a-local', 'registered', NOW);
    await stack.presets.put(psid, 'Z-local', 'registered', NOW);
    expect(await both(['CIR007'])).toEqual({ fresh: false, script: 'ok' });
    expect(await both(['CIR007'])).toEqual({ fresh: true, script: 'unchanged' });
    // Opted out: never fresh (the script decides), and no query opens.
    await env.redis.set(optOutKey(env.prefix, psid), NOW.toISOString());
    expect(await both(['CIR007'])).toEqual({ fresh: false, script: 'ok' });
    await env.redis.del(optOutKey(env.prefix, psid));
    // A new version (the record changed): its queries opened with it, so the same again is fresh.
    await stack.committer.commit({
      patientServiceId: psid,
      record: clinical(1),
      eventId: 'e2',
      now: NOW,
      extraCategories: [],
      problemList: ['CIR007'],
    });
    const state = await stack.committer.storedState(psid, retired);
    expect(state).toMatchObject({ version: 2, optedOut: false, survivor: undefined });
    expect(await both(['CIR007'])).toEqual({ fresh: true, script: 'unchanged' });
  });

  it('storedState names the survivor of a retired patient', async () => {
    const psid = stack.crosswalk.plan('MRN-RETIRED').patientServiceId;
    const retired = stack.crosswalk.retiredKeyOf(psid);
    expect(await stack.committer.storedState(psid, retired)).toEqual({
      version: 0,
      sealedClinical: undefined,
      queriesOpened: undefined,
      presets: {},
      optedOut: false,
      survivor: undefined,
      stale: false,
    });
    await env.redis.set(retired, 'the-survivor');
    expect((await stack.committer.storedState(psid, retired)).survivor).toBe('the-survivor');
  });

  /** A known patient's update that the script verifies against the lookup entry of `localId`. */
  const verified = (localId: string, psid: string, eventId: string, age = 57): CommitInput => ({
    patientServiceId: psid,
    verify: {
      lookupKey: stack.crosswalk.lookupKeyOf(localId),
      retiredKey: stack.crosswalk.retiredKeyOf(psid),
    },
    record: put(psid, { ...samplePatient, demographics: { age, gender: 'female' } }),
    eventId,
    now: NOW,
    extraCategories: ['END002'],
    remember: true,
  });

  async function newPatient(localId: string): Promise<string> {
    const plan = stack.crosswalk.plan(localId);
    const result = await stack.committer.commit({
      patientServiceId: plan.patientServiceId,
      newPatient: plan,
      record: put(plan.patientServiceId),
      eventId: `${localId}-first`,
      now: NOW,
      extraCategories: ['END002'],
    });
    expect(result).toMatchObject({ status: 'ok' });
    return plan.patientServiceId;
  }

  it('verifies a cached service id: stale when the entry names another or none, retired after a merge', async () => {
    const psid = await newPatient('MRN-V');
    expect(await stack.committer.commit(verified('MRN-V', psid, 'v1', 60))).toMatchObject({
      status: 'ok',
      version: 2,
    });
    const before = await env.redis.hgetall(stack.records.keyOf(psid));

    // The entry names another service id (purged and created again by another process).
    expect(await stack.committer.commit(verified('MRN-V', 'someone-else', 'v2'))).toEqual({
      status: 'stale',
    });
    expect(await stack.records.version('someone-else')).toBe(0);
    // The entry is gone (purged).
    await stack.crosswalk.remove('MRN-V');
    expect(await stack.committer.commit(verified('MRN-V', psid, 'v3', 61))).toEqual({
      status: 'stale',
    });
    expect(await env.redis.hgetall(stack.records.keyOf(psid))).toEqual(before);

    // Retired by a merge: the entry still names it, its retired key names the survivor.
    const merged = await newPatient('MRN-M');
    await env.redis.set(stack.crosswalk.retiredKeyOf(merged), 'the-survivor');
    const recordBefore = await env.redis.hgetall(stack.records.keyOf(merged));
    expect(await stack.committer.commit(verified('MRN-M', merged, 'm1', 62))).toEqual({
      status: 'retired',
    });
    expect(await env.redis.hgetall(stack.records.keyOf(merged))).toEqual(recordBefore);
    // Nothing was remembered either (only v1's event id): they go through once the patient is right.
    expect(await env.redis.keys(`${env.prefix}:idem:*`)).toHaveLength(1);
  });

  it('commitMany commits many patients in one call, each item as commit would', async () => {
    const a = await newPatient('MRN-A');
    const plan = stack.crosswalk.plan('MRN-B');
    const b = plan.patientServiceId;
    const results = await stack.committer.commitMany([
      verified('MRN-A', a, 'a1', 60),
      {
        patientServiceId: b,
        newPatient: plan,
        record: put(b),
        eventId: 'b1',
        now: NOW,
        extraCategories: ['END002'],
        remember: true,
      },
      // The same event id again for A: a duplicate of the first item, within the same call.
      verified('MRN-A', a, 'a1', 61),
      // A record-less update of B, created by the second item.
      {
        patientServiceId: b,
        verify: {
          lookupKey: stack.crosswalk.lookupKeyOf('MRN-B'),
          retiredKey: stack.crosswalk.retiredKeyOf(b),
        },
        record: { kind: 'keep' },
        eventId: 'b2',
        now: NOW,
        extraCategories: ['CIR007'],
      },
    ]);
    expect(results).toEqual([
      {
        status: 'ok',
        version: 2,
        optedOut: false,
        queries: [{ ccsr_category: 'END002', job_id: `q-${a}-END002-1`, coalesced: true }],
      },
      {
        status: 'ok',
        version: 1,
        optedOut: false,
        queries: [{ ccsr_category: 'END002', job_id: `q-${b}-END002-1`, coalesced: false }],
      },
      {
        status: 'duplicate',
        answer: {
          event_id: 'a1',
          patient_service_id: a,
          queries: [{ ccsr_category: 'END002', job_id: `q-${a}-END002-1`, coalesced: true }],
        },
      },
      {
        status: 'ok',
        version: 1,
        optedOut: false,
        queries: [{ ccsr_category: 'CIR007', job_id: `q-${b}-CIR007-1`, coalesced: false }],
      },
    ]);
    expect(await stack.crosswalk.find('MRN-B')).toBe(b);
    expect((await stack.records.get(a))?.record?.demographics.age).toBe(60);
  });

  it('commitMany writes nothing of a call with a refused item, and no later call of its partition', async () => {
    const a = await newPatient('MRN-R');
    const dumpBefore = async () => {
      const keys = (await env.redis.keys(`${env.prefix}*`)).sort();
      return Promise.all(keys.map(async (key) => [key, await env.redis.dump(key)]));
    };
    const before = await dumpBefore();
    const items: CommitInput[] = [
      verified('MRN-R', a, 'r1', 70),
      // A known patient without a record, and an update without one: missing.
      {
        patientServiceId: 'no-record',
        record: { kind: 'keep' },
        eventId: 'x',
        now: NOW,
        extraCategories: ['END002'],
      },
      verified('MRN-R', a, 'r2', 71),
    ];
    expect(await stack.committer.commitMany(items)).toEqual([
      { status: 'skipped' },
      { status: 'missing' },
      { status: 'skipped' },
    ]);
    expect(await dumpBefore()).toEqual(before);

    // More than one call's items: the first call commits, the second is refused (stale).
    const many = Array.from({ length: MAX_ITEMS_PER_SCRIPT + 2 }, (_, i) =>
      verified('MRN-R', a, `many-${i}`, 20 + (i % 50)),
    );
    many[MAX_ITEMS_PER_SCRIPT + 1] = verified('MRN-R', 'not-its-id', 'stale');
    const results = await stack.committer.commitMany(many);
    expect(results.slice(0, MAX_ITEMS_PER_SCRIPT).every((r) => r.status === 'ok')).toBe(true);
    expect(results.slice(MAX_ITEMS_PER_SCRIPT)).toEqual([
      { status: 'skipped' },
      { status: 'stale' },
    ]);
    expect(await stack.records.version(a)).toBe(1 + MAX_ITEMS_PER_SCRIPT);
  });

  it('commitMany takes JSON updates only', async () => {
    await expect(
      stack.committer.commitMany([
        {
          patientServiceId: 'p',
          record: { kind: 'clinical', sealed: 'x', expectedVersion: 0 },
          eventId: 'e',
          now: NOW,
          extraCategories: [],
        },
      ]),
    ).rejects.toThrow(TypeError);
  });
});

describe('UpdateCommitter.commitMany over partitions (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  afterEach(() => env.cleanup());

  it("groups the items by partition, keeping each patient's order", async () => {
    env = await isolatedRedis();
    const { redis } = env;
    const partitions = new Partitions(env.prefix, 3);
    const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
    const crosswalk = new Crosswalk({ redis, prefix: partitions, keys });
    const records = new RecordStore({ redis, prefix: partitions, keys });
    const presets = new PresetStore({ redis, prefix: partitions });
    const committer = new UpdateCommitter({
      redis,
      prefix: partitions,
      records,
      presets,
      idempotency: new IdempotencyStore({ redis, prefix: partitions, ttlSeconds: 600 }),
      debounceMs: 1_000,
    });
    const plans = Array.from({ length: 9 }, (_, i) => crosswalk.plan(`MRN-P${i}`));
    expect(new Set(plans.map((p) => partitions.prefixOf(p.patientServiceId))).size).toBeGreaterThan(
      1,
    );
    const inputs: CommitInput[] = [];
    for (let round = 0; round < 2; round++) {
      for (const plan of plans) {
        const psid = plan.patientServiceId;
        const record = {
          ...samplePatient,
          demographics: { age: 30 + round, gender: 'male' as const },
        };
        inputs.push({
          patientServiceId: psid,
          newPatient: plan,
          record: {
            kind: 'put',
            sealed: records.sealRecord(psid, record),
            contentHmac: records.contentHmac(psid, record),
          },
          eventId: `e${round}`,
          now: NOW,
          extraCategories: ['END002'],
          remember: true,
        });
      }
    }
    const results = await committer.commitMany(inputs);
    expect(results.map((r) => r.status)).toEqual(inputs.map(() => 'ok'));
    for (const [i, plan] of plans.entries()) {
      expect(await crosswalk.find(`MRN-P${i}`)).toBe(plan.patientServiceId);
      const stored = await records.get(plan.patientServiceId);
      expect(stored?.version).toBe(2);
      expect(stored?.record?.demographics.age).toBe(31);
    }
  });
});
