import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ResultEventSchema, type ResultEvent } from '../interface/result-event.ts';
import type { AssembledPatient } from '../interface/assembled-patient.ts';
import { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import { PatientConsent } from '../privacy/patient-consent.ts';
import type { WaitDecision } from '../records/demographics-wait.ts';
import { ingestStack } from '../../test/support/ingest-stack.ts';
import { isolatedRedis } from '../../test/support/redis.ts';
import { samplePatient } from '../../test/support/sample-patient.ts';
import { DueQueries, submitHoldKey, type ClaimedQuery } from './due-queries.ts';
import { LatencyProfiles } from './latency-profiles.ts';
import { holdKey, PollSet, pollSetKey, type PolledRemoteJob } from './poll-set.ts';
import type { LifecycleRules, SubmitFailure } from './query-lifecycle.ts';
import { queryOutboxKey, queryStateKey } from './query-outbox.ts';
import {
  SubmitScheduler,
  type Prepared,
  type SubmitOutcome,
  type SubmitPorts,
} from './submit-scheduler.ts';

const RULES: LifecycleRules = {
  deadlineMs: 60_000,
  resubmitLost: 1,
  deliverSuperseded: false,
  maxStalledCount: 1,
  authPauseMs: 30_000,
  submitAttempts: 3,
};
const SCHEDULE = { firstDelayMs: 100, factor: 2, maxDelayMs: 1_000, jitter: 0, deadlineMs: 60_000 };
const DEBOUNCE_MS = 2_000;
const BACKOFF_MS = 1_000;
const CATEGORY = 'END002';

/** A failure of `prepare` or `submit` as the port's table gives it: `classify` reads it back. */
class PortFailure extends Error {
  readonly failure: SubmitFailure | undefined;
  readonly reached: 'timeout' | 'connection_lost' | undefined;

  constructor(failure: SubmitFailure | undefined, reached?: 'timeout' | 'connection_lost') {
    super(failure === undefined ? 'unexpected' : failure.kind);
    this.name = 'PortFailure';
    this.failure = failure;
    this.reached = reached;
  }
}

/** What the service answers a POST: a remote job id, or a failure. */
type PostAnswer = string | PortFailure;

/**
 * The scheduler against real Redis: queries are opened the way ingest opens them (the committer's
 * one script, with the record and the crosswalk entry), the service and the record preparation
 * are tables of answers per patient (the ports' contract), the remote job is stored by the real
 * QueryState, and the clock is the test's.
 */
describe('SubmitScheduler (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let stack: ReturnType<typeof ingestStack>;
  let due: DueQueries;
  let metrics: PipelineMetrics;
  let clock: number;
  let pauseKey: string;
  /** POST answers per patient service id, in order (a remote job id by default). */
  const posts = new Map<string, PostAnswer[]>();
  /** What `prepare` makes of a patient's record (a payload by default), or what it throws. */
  const prepared = new Map<string, Prepared | PortFailure>();
  /** Run when a patient's record is prepared (what another worker does meanwhile). */
  const whilePreparing = new Map<string, () => Promise<void>>();
  /** What `park` answers per patient (wait 10 s by default). */
  const parked = new Map<string, WaitDecision>();
  const payloadOf = new Map<AssembledPatient, string>();
  /** Patient service ids in the order their POSTs were sent. */
  const sent: string[] = [];
  const delivered: ResultEvent[][] = [];
  const outcomes: SubmitOutcome[] = [];
  let pauses = 0;
  /** POSTs not answered yet, and the most ever at once. */
  let postsOut = 0;
  let mostPostsOut = 0;
  /** While set, POSTs wait for it to resolve (`release`). */
  let gate: Promise<void> | undefined;
  let release: () => void = () => undefined;
  let onSent: () => void = () => undefined;

  const ports: SubmitPorts = {
    async prepare(query) {
      const psid = query.patientServiceId;
      await whilePreparing.get(psid)?.();
      const answer = prepared.get(psid);
      if (answer instanceof PortFailure) throw answer;
      if (answer !== undefined) return answer;
      const payload = { ...samplePatient };
      payloadOf.set(payload, psid);
      return { kind: 'payload', payload, recordVersion: Number(query.record.version) };
    },
    async submit(payload, category) {
      expect(category).toBe(CATEGORY);
      const psid = payloadOf.get(payload) ?? 'unknown';
      sent.push(psid);
      onSent();
      postsOut += 1;
      mostPostsOut = Math.max(mostPostsOut, postsOut);
      try {
        if (gate !== undefined) await gate;
        const answer = posts.get(psid)?.shift() ?? `job-${psid}-${sent.length}`;
        if (answer instanceof PortFailure) throw answer;
        return answer;
      } finally {
        postsOut -= 1;
      }
    },
    classify: (err) => (err instanceof PortFailure ? err.failure : undefined),
    mayHaveReached: (err) => (err instanceof PortFailure ? err.reached : undefined),
    submitted: (query, remote, firstPollAt) =>
      stack.state.markSubmitted(
        query.patientServiceId,
        query.ccsrCategory,
        query.seq,
        remote,
        firstPollAt,
      ),
    async park(query, now) {
      return parked.get(query.patientServiceId) ?? { kind: 'wait', until: now + 10_000 };
    },
    async deliver(events) {
      delivered.push(events);
    },
    async pauseForAuth() {
      // As AuthPause does: the flag the claim script checks.
      pauses += 1;
      await env.redis.set(pauseKey, 'ERR_SERVICE_AUTH');
    },
    localIdOf: (query) => stack.crosswalk.openLocalId(query.patientServiceId, query.sealedLocalId),
  };

  const scheduler = (
    options: { batch?: number; concurrency?: number; rules?: Partial<LifecycleRules> } = {},
  ) =>
    new SubmitScheduler({
      due,
      ports,
      profiles: new LatencyProfiles({
        source: new PollSet({
          redis: env.redis,
          prefix: env.prefix,
          holdKey: holdKey(env.prefix),
          pauseKey,
        }),
        now: () => clock,
      }),
      rules: { ...RULES, ...options.rules },
      schedule: SCHEDULE,
      backoffMs: BACKOFF_MS,
      demographicsWaitS: 60,
      claiming: {
        interval_ms: 10,
        batch: options.batch ?? 10,
        lease_ms: 30_000,
        concurrency: options.concurrency ?? options.batch ?? 10,
      },
      logger: pino({ level: 'silent' }),
      metrics,
      onOutcome: (o) => outcomes.push(o),
      now: () => clock,
      // No jitter: a retry waits exactly backoff_ms * 2^failures.
      random: () => 0.5,
    });

  beforeEach(async () => {
    env = await isolatedRedis();
    stack = ingestStack({ redis: env.redis, prefix: env.prefix, debounceMs: DEBOUNCE_MS });
    pauseKey = `${env.prefix}:paused`;
    due = new DueQueries({
      redis: env.redis,
      prefix: env.prefix,
      holdKey: submitHoldKey(env.prefix),
      pauseKey,
    });
    metrics = new PipelineMetrics(new Registry());
    clock = 1_800_000_000_000;
    for (const table of [posts, prepared, whilePreparing, parked, payloadOf]) table.clear();
    for (const list of [sent, delivered, outcomes]) list.length = 0;
    pauses = 0;
    postsOut = 0;
    mostPostsOut = 0;
    gate = undefined;
    onSent = () => undefined;
  });
  afterEach(() => env.cleanup());

  /**
   * Stores a record for a new patient `mrn` and opens its query, as ingest does (one script): due
   * DEBOUNCE_MS after now. Returns the patient's service id.
   */
  async function open(mrn: string, eventId = `ev-${mrn}`, category = CATEGORY): Promise<string> {
    const plan = stack.crosswalk.plan(mrn);
    const psid = plan.patientServiceId;
    const result = await stack.committer.commit({
      patientServiceId: psid,
      newPatient: plan,
      record: {
        kind: 'put',
        sealed: stack.records.sealRecord(psid, samplePatient),
        contentHmac: stack.records.contentHmac(psid, samplePatient),
      },
      eventId,
      now: new Date(clock),
      extraCategories: [category],
    });
    expect(result).toMatchObject({ status: 'ok', queries: [{ coalesced: false }] });
    return psid;
  }

  /** A later update of a known patient with another record: opens the next query of the key. */
  async function update(psid: string, eventId: string, age: number): Promise<void> {
    const record = { ...samplePatient, demographics: { age, gender: 'female' as const } };
    expect(
      await stack.committer.commit({
        patientServiceId: psid,
        record: {
          kind: 'put',
          sealed: stack.records.sealRecord(psid, record),
          contentHmac: stack.records.contentHmac(psid, record),
        },
        eventId,
        now: new Date(clock),
        extraCategories: [CATEGORY],
      }),
    ).toMatchObject({ status: 'ok', queries: [{ coalesced: false }] });
  }

  /** A worker that claims what is due (its lease ending at once) and dies holding it. */
  const deadWorkerClaims = () => due.claim(clock, clock, [randomUUID()]);

  async function tickAndSettle(s: SubmitScheduler): Promise<number> {
    const n = await s.tick();
    await s.settled();
    return n;
  }

  const qs = (psid: string) => queryStateKey(env.prefix, psid, CATEGORY);
  const member = (psid: string, seq = 1) => `${psid}|${CATEGORY}|${seq}`;
  const dueAt = async (psid: string, seq = 1) =>
    env.redis.zscore(queryOutboxKey(env.prefix), member(psid, seq));
  const remoteOf = async (psid: string, seq = 1) => {
    const json = await env.redis.hget(qs(psid), `r:${seq}`);
    return json === null ? undefined : (JSON.parse(json) as PolledRemoteJob);
  };
  const events = () => delivered.flat().map((e) => ResultEventSchema.parse(e));
  const counted = async (counter: { get(): Promise<{ values: unknown[] }> }) =>
    (await counter.get()).values;

  it('submits a due query once when it comes due, storing its remote job and first poll', async () => {
    const psid = await open('MRN-1');
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(0);
    clock += DEBOUNCE_MS - 1;
    expect(await tickAndSettle(s)).toBe(0);
    clock += 1;
    expect(await tickAndSettle(s)).toBe(1);

    expect(sent).toEqual([psid]);
    const queryId = await env.redis.hget(qs(psid), 'i:1');
    expect(queryId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await remoteOf(psid)).toEqual({
      remoteJobId: `job-${psid}-1`,
      submittedAt: clock,
      resubmits: 0,
      recordVersion: 1,
      queryId,
      polls: 0,
    });
    // Out of the due set of new queries, into the due set of polls after first_delay_ms.
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
    expect(await env.redis.zscore(pollSetKey(env.prefix), member(psid))).toBe(
      String(clock + SCHEDULE.firstDelayMs),
    );
    expect(await env.redis.hget(qs(psid), 'submitted')).toBe('1');
    // The claimed triggers stay for the result event; the attempt's marks are gone.
    expect(JSON.parse((await env.redis.hget(qs(psid), 'c:1')) ?? 'null')).toMatchObject({
      eventIds: ['ev-MRN-1'],
      count: 1,
    });
    expect(await env.redis.hmget(qs(psid), 's:1', 'l:1', 'f:1')).toEqual([null, null, null]);
    expect(delivered).toEqual([]);
    expect(outcomes).toEqual([]);
    expect(await counted(metrics.submitWindow)).toContainEqual(
      expect.objectContaining({ metricName: 'cw_submit_window_seconds_count', value: 1 }),
    );

    clock += 60_000;
    expect(await tickAndSettle(s)).toBe(0);
    expect(sent).toHaveLength(1);
  });

  it('claims a backlog larger than the batch over several ticks, never over `concurrency` POSTs', async () => {
    const psids: string[] = [];
    for (let i = 0; i < 7; i++) psids.push(await open(`MRN-B${i}`));
    clock += DEBOUNCE_MS;
    const s = scheduler({ batch: 2, concurrency: 3 });
    gate = new Promise((resolve) => (release = resolve));
    const threeSent = new Promise<void>((resolve) => {
      onSent = () => {
        if (sent.length === 3) resolve();
      };
    });

    // 2 (a batch), then 1 (the free slot), then none while three POSTs are out.
    expect(await s.tick()).toBe(2);
    expect(await s.tick()).toBe(1);
    expect(await s.tick()).toBe(0);
    await threeSent;
    expect(await s.tick()).toBe(0);
    expect(postsOut).toBe(3);
    release();
    gate = undefined;
    await s.settled();

    const claims: number[] = [];
    for (let n = await tickAndSettle(s); n > 0; n = await tickAndSettle(s)) claims.push(n);
    expect(claims).toEqual([2, 2]);
    expect(mostPostsOut).toBe(3);
    expect([...sent].sort()).toEqual([...psids].sort());
    expect(await env.redis.zcard(pollSetKey(env.prefix))).toBe(7);
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
  });

  it('ends a query without a stored record ERR_RECORD_MISSING, with an event, unsent', async () => {
    // A producer that stores no record (QueryState.schedule): no record, no crosswalk entry.
    const bare = 'psid-without-record';
    await stack.state.schedule(bare, CATEGORY, { eventId: 'ev-bare', at: 'x' }, clock);
    // A record is stored but cannot be opened any more (prepare finds nothing).
    const unreadable = await open('MRN-UNREADABLE');
    prepared.set(unreadable, { kind: 'missing' });
    clock += DEBOUNCE_MS;
    expect(await tickAndSettle(scheduler())).toBe(2);

    expect(sent).toEqual([]);
    expect(delivered).toHaveLength(1);
    const byPatient = new Map(events().map((e) => [e.patient_service_id, e]));
    for (const [psid, patientId] of [
      [bare, null],
      [unreadable, 'MRN-UNREADABLE'],
    ] as const) {
      expect(byPatient.get(psid)).toMatchObject({
        type: 'concordance.failed',
        status: 'rejected',
        patient_id: patientId,
        ccsr_category: CATEGORY,
        remote_job_id: null,
        error: { code: 'ERR_RECORD_MISSING', message: 'no record is stored for this patient' },
      });
    }
    expect(byPatient.get(bare)?.triggered_by.event_ids).toEqual(['ev-bare']);
    expect(outcomes.map((o) => o.eventId).sort()).toEqual(
      events()
        .map((e) => e.id)
        .sort(),
    );
    // Ended and forgotten.
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
    expect(await env.redis.hmget(qs(bare), 'c:1', 'i:1', 'l:1')).toEqual([null, null, null]);
    expect(await counted(metrics.queriesFinished)).toEqual([
      expect.objectContaining({ labels: { outcome: 'rejected' }, value: 2 }),
    ]);
  });

  it('ends a refused or permanently failed submission with its code, sent once', async () => {
    const items = [{ loc: ['body', 'ccsr_category'], msg: 'unknown', type: 'value_error' }];
    const invalid = await open('MRN-422');
    posts.set(invalid, [
      new PortFailure({
        kind: 'refused',
        code: 'ERR_SERVICE_VALIDATION',
        message: 'the service refused the body',
        items,
      }),
    ]);
    const notFound = await open('MRN-404');
    posts.set(notFound, [
      new PortFailure({
        kind: 'permanent',
        code: 'ERR_SERVICE_NOT_FOUND',
        message: 'POST /v1/concordance answered 404',
      }),
    ]);
    // Refused before anything is sent: the record leaks an identifier.
    const leaking = await open('MRN-LEAK');
    prepared.set(
      leaking,
      new PortFailure({ kind: 'refused', code: 'ERR_IDENTIFIER_LEAK', message: 'a local id' }),
    );
    clock += DEBOUNCE_MS;
    expect(await tickAndSettle(scheduler())).toBe(3);

    expect(sent.sort()).toEqual([invalid, notFound].sort());
    expect(delivered).toHaveLength(1);
    const byPatient = new Map(events().map((e) => [e.patient_service_id, e]));
    expect(byPatient.get(invalid)).toMatchObject({
      status: 'rejected',
      record_version: 1,
      error: { code: 'ERR_SERVICE_VALIDATION', message: 'the service refused the body', items },
    });
    expect(byPatient.get(notFound)).toMatchObject({
      status: 'failed',
      error: { code: 'ERR_SERVICE_NOT_FOUND', message: 'POST /v1/concordance answered 404' },
    });
    expect(byPatient.get(leaking)).toMatchObject({
      status: 'rejected',
      record_version: null,
      error: { code: 'ERR_IDENTIFIER_LEAK' },
    });
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);

    // Nothing comes back: never sent again.
    clock += 60_000;
    expect(await tickAndSettle(scheduler())).toBe(0);
    expect(sent).toHaveLength(2);
  });

  it('retries a transient failure after a doubling backoff, counting it, until submit_attempts', async () => {
    const psid = await open('MRN-5XX');
    const unavailable = () =>
      new PortFailure({
        kind: 'transient',
        code: 'ERR_SERVICE_UNAVAILABLE',
        message: 'POST /v1/concordance answered 503',
      });
    posts.set(psid, [unavailable(), unavailable(), unavailable()]);
    clock += DEBOUNCE_MS;
    const s = scheduler();

    // Attempt 1 fails: due again backoff_ms later, one failure counted, the attempt over.
    expect(await tickAndSettle(s)).toBe(1);
    expect(await dueAt(psid)).toBe(String(clock + BACKOFF_MS));
    expect(await env.redis.hmget(qs(psid), 'f:1', 's:1', 'l:1')).toEqual(['1', null, null]);
    clock += BACKOFF_MS - 1;
    expect(await tickAndSettle(s)).toBe(0);
    clock += 1;

    // Attempt 2 fails: twice the backoff.
    expect(await tickAndSettle(s)).toBe(1);
    expect(await dueAt(psid)).toBe(String(clock + 2 * BACKOFF_MS));
    expect(await env.redis.hget(qs(psid), 'f:1')).toBe('2');
    expect(delivered).toEqual([]);
    clock += 2 * BACKOFF_MS;

    // Attempt 3 is the last: the query ends failed, saying how many.
    expect(await tickAndSettle(s)).toBe(1);
    expect(sent).toEqual([psid, psid, psid]);
    expect(events()).toMatchObject([
      {
        status: 'failed',
        error: {
          code: 'ERR_SERVICE_UNAVAILABLE',
          message: 'POST /v1/concordance answered 503 (after 3 attempts)',
        },
      },
    ]);
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
    expect(await env.redis.hget(qs(psid), 'f:1')).toBeNull();
    // A 503 came back: nothing was possibly sent twice.
    expect(await counted(metrics.possibleDuplicates)).toEqual([]);
  });

  it('counts a retried submission that may have reached the service as a possible duplicate', async () => {
    const psid = await open('MRN-TIMEOUT');
    const timeout: SubmitFailure = {
      kind: 'transient',
      code: 'ERR_SERVICE_TIMEOUT',
      message: 'no answer',
    };
    posts.set(psid, [new PortFailure(timeout, 'timeout')]);
    clock += DEBOUNCE_MS;
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(1);
    clock += BACKOFF_MS;
    expect(await tickAndSettle(s)).toBe(1);

    expect(sent).toEqual([psid, psid]);
    expect((await remoteOf(psid))?.remoteJobId).toBe(`job-${psid}-2`);
    expect(await counted(metrics.possibleDuplicates)).toEqual([
      expect.objectContaining({ labels: { reason: 'timeout' }, value: 1 }),
    ]);
  });

  it('holds the partition for a 429 without counting an attempt, then sends again', async () => {
    const limited = await open('MRN-429');
    const other = await open('MRN-OK');
    posts.set(limited, [new PortFailure({ kind: 'rate_limited', retryAfterMs: 5_000 })]);
    clock += DEBOUNCE_MS;
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(2);

    // The other query of the batch went through; the limited one keeps its place, 5 s later.
    expect((await remoteOf(other))?.remoteJobId).toBeDefined();
    const hold = await env.redis.pttl(submitHoldKey(env.prefix));
    expect(hold).toBeGreaterThan(4_000);
    expect(hold).toBeLessThanOrEqual(5_000);
    expect(await dueAt(limited)).toBe(String(clock + 5_000));
    expect(await env.redis.hmget(qs(limited), 'f:1', 's:1', 'l:1')).toEqual([null, null, null]);
    expect(delivered).toEqual([]);

    // Held: nothing is claimed, even once due.
    clock += 5_000;
    expect(await tickAndSettle(s)).toBe(0);
    // The hold runs out (its key expires with it).
    await env.redis.del(submitHoldKey(env.prefix));
    expect(await tickAndSettle(s)).toBe(1);
    expect(sent.filter((p) => p === limited)).toHaveLength(2);
    expect((await remoteOf(limited))?.remoteJobId).toBe(`job-${limited}-3`);
    // The 429 answered: the second attempt was not an interrupted one.
    expect(await counted(metrics.possibleDuplicates)).toEqual([]);
  });

  it('pauses the queries for a refused API key, keeping the query in place uncounted', async () => {
    const psid = await open('MRN-401');
    posts.set(psid, [new PortFailure({ kind: 'auth_refused' })]);
    clock += DEBOUNCE_MS;
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(1);

    expect(pauses).toBe(1);
    expect(await dueAt(psid)).toBe(String(clock + RULES.authPauseMs));
    expect(await env.redis.hmget(qs(psid), 'f:1', 's:1')).toEqual([null, null]);
    expect(delivered).toEqual([]);
    clock += RULES.authPauseMs;
    expect(await tickAndSettle(s)).toBe(0);
    // A worker with a valid key lifts the pause.
    await env.redis.del(pauseKey);
    expect(await tickAndSettle(s)).toBe(1);
    expect(sent).toEqual([psid, psid]);
    expect(await remoteOf(psid)).toBeDefined();
  });

  it("ends an opted-out patient's query ERR_PATIENT_OPTED_OUT without preparing or sending it", async () => {
    const psid = await open('MRN-OPTOUT');
    await new PatientConsent({ redis: env.redis, prefix: env.prefix }).optOut(psid);
    let preparedAny = false;
    whilePreparing.set(psid, async () => {
      preparedAny = true;
    });
    clock += DEBOUNCE_MS;
    expect(await tickAndSettle(scheduler())).toBe(1);

    expect(preparedAny).toBe(false);
    expect(sent).toEqual([]);
    expect(events()).toMatchObject([
      {
        status: 'rejected',
        patient_id: 'MRN-OPTOUT',
        error: { code: 'ERR_PATIENT_OPTED_OUT' },
      },
    ]);
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
    expect(await env.redis.hget(qs(psid), 'c:1')).toBeNull();
  });

  it('puts a query whose remote job another attempt stored meanwhile to polling, unsent', async () => {
    const psid = await open('MRN-STORED');
    clock += DEBOUNCE_MS;
    // A first worker claims the query and sends it; its POST is slow and its claim runs out.
    const [first] = await deadWorkerClaims();
    expect(first).toBeDefined();
    expect(await due.begin([first as ClaimedQuery])).toEqual([{ state: 'new' }]);
    // While this scheduler prepares its claim, the first worker's POST answers and is stored.
    const remote: PolledRemoteJob = {
      remoteJobId: 'job-first-worker',
      submittedAt: clock,
      resubmits: 0,
      recordVersion: 1,
      queryId: (first as ClaimedQuery).queryId,
      polls: 0,
    };
    whilePreparing.set(psid, () =>
      stack.state.markSubmitted(psid, CATEGORY, 1, remote, clock + SCHEDULE.firstDelayMs),
    );
    expect(await tickAndSettle(scheduler())).toBe(1);

    expect(sent).toEqual([]);
    expect(await remoteOf(psid)).toEqual(remote);
    expect(await env.redis.zscore(pollSetKey(env.prefix), member(psid))).not.toBeNull();
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
    expect(delivered).toEqual([]);
    expect(outcomes).toEqual([]);
    expect(await counted(metrics.possibleDuplicates)).toEqual([]);
  });

  it('sends again an attempt begun but never stored (its worker died), counted worker_restart', async () => {
    const psid = await open('MRN-DIED');
    clock += DEBOUNCE_MS;
    // A worker claims the query, marks its submission begun, and dies during the POST.
    const [first] = await deadWorkerClaims();
    expect(await due.begin([first as ClaimedQuery])).toEqual([{ state: 'new' }]);
    expect(await tickAndSettle(scheduler())).toBe(1);

    expect(sent).toEqual([psid]);
    // Same query, same id: its event (if any) is the one the first worker would have sent.
    expect(await remoteOf(psid)).toMatchObject({
      remoteJobId: `job-${psid}-1`,
      queryId: (first as ClaimedQuery).queryId,
    });
    expect(await env.redis.zscore(pollSetKey(env.prefix), member(psid))).not.toBeNull();
    expect(await counted(metrics.possibleDuplicates)).toEqual([
      expect.objectContaining({ labels: { reason: 'worker_restart' }, value: 1 }),
    ]);
  });

  it('forgets a query superseded by a newer submitted one of its key, unsent', async () => {
    const psid = await open('MRN-SUP');
    // The first query waits for a birth date (parked until 10 s later).
    prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    clock += DEBOUNCE_MS;
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(1);
    expect(await dueAt(psid, 1)).toBe(String(clock + 10_000));
    // A newer update opens query 2, which is sent first.
    prepared.delete(psid);
    await update(psid, 'ev-2', 58);
    clock += DEBOUNCE_MS;
    expect(await tickAndSettle(s)).toBe(1);
    expect(await env.redis.hget(qs(psid), 'submitted')).toBe('2');

    // Query 1 comes due again: superseded, it ends without a POST nor an event.
    clock += 10_000;
    expect(await tickAndSettle(s)).toBe(1);
    expect(sent).toEqual([psid]);
    expect(outcomes.map((o) => [o.data.seq, o.decision, o.eventId])).toEqual([
      [1, { kind: 'forget', countAs: 'superseded' }, null],
    ]);
    expect(delivered).toEqual([]);
    expect(await dueAt(psid, 1)).toBeNull();
    expect(await env.redis.hget(qs(psid), 'c:1')).toBeNull();
    expect(await remoteOf(psid, 2)).toBeDefined();
    expect(await counted(metrics.queriesFinished)).toEqual([
      expect.objectContaining({ labels: { outcome: 'superseded' }, value: 1 }),
    ]);
  });

  it.each([
    { deadWorkers: 1, leases: 2, stalled: false },
    { deadWorkers: 2, leases: 3, stalled: true },
  ])(
    'max_stalled_count 1, $deadWorkers dead worker(s) (lease $leases): stalled $stalled',
    async ({ deadWorkers, stalled }) => {
      const psid = await open('MRN-STALL');
      clock += DEBOUNCE_MS;
      for (let i = 0; i < deadWorkers; i++) expect(await deadWorkerClaims()).toHaveLength(1);
      expect(await tickAndSettle(scheduler())).toBe(1);

      if (!stalled) {
        expect(sent).toEqual([psid]);
        expect(delivered).toEqual([]);
        return;
      }
      expect(sent).toEqual([]);
      expect(events()).toMatchObject([
        {
          status: 'failed',
          patient_id: 'MRN-STALL',
          error: {
            code: 'ERR_QUERY_STALLED',
            message: "the query's worker stopped more than 1 times while it ran",
          },
        },
      ]);
      expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
      expect(await env.redis.hget(qs(psid), 'l:1')).toBeNull();
    },
  );

  it('forgets a superseded query even when its workers died with it (as on the poll side)', async () => {
    const psid = await open('MRN-SUP-STALL');
    prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    clock += DEBOUNCE_MS;
    const s = scheduler();
    expect(await tickAndSettle(s)).toBe(1);
    prepared.delete(psid);
    await update(psid, 'ev-2', 58);
    clock += DEBOUNCE_MS;
    expect(await tickAndSettle(s)).toBe(1);
    // Query 1 comes due again and two workers die holding it.
    clock += 10_000;
    for (let i = 0; i < 2; i++) expect(await deadWorkerClaims()).toHaveLength(1);
    expect(await tickAndSettle(s)).toBe(1);

    expect(outcomes.map((o) => [o.data.seq, o.decision.kind])).toEqual([[1, 'forget']]);
    expect(delivered).toEqual([]);
    expect(sent).toEqual([psid]);
  });

  it("ends an opted-out patient's stalled query ERR_PATIENT_OPTED_OUT, unsent", async () => {
    const psid = await open('MRN-OPTOUT-STALL');
    clock += DEBOUNCE_MS;
    for (let i = 0; i < 2; i++) expect(await deadWorkerClaims()).toHaveLength(1);
    await new PatientConsent({ redis: env.redis, prefix: env.prefix }).optOut(psid);
    expect(await tickAndSettle(scheduler())).toBe(1);
    expect(sent).toEqual([]);
    expect(events()).toMatchObject([
      { status: 'rejected', error: { code: 'ERR_PATIENT_OPTED_OUT' } },
    ]);
  });

  it('ends a query stalled at once with max_stalled_count 0 after one dead worker', async () => {
    await open('MRN-STALL0');
    clock += DEBOUNCE_MS;
    await deadWorkerClaims();
    expect(await tickAndSettle(scheduler({ rules: { maxStalledCount: 0 } }))).toBe(1);
    expect(sent).toEqual([]);
    expect(events()).toMatchObject([{ error: { code: 'ERR_QUERY_STALLED' } }]);
  });

  it.each([
    {
      wait: { kind: 'expired' } as const,
      event: { status: 'failed', error: { code: 'ERR_RECORD_WAITING_EXPIRED' } },
    },
    { wait: { kind: 'replaced' } as const, event: undefined },
  ])('ends a query without a birth date when its wait is $wait.kind', async ({ wait, event }) => {
    const psid = await open('MRN-NOBIRTH');
    prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    parked.set(psid, wait);
    clock += DEBOUNCE_MS;
    expect(await tickAndSettle(scheduler())).toBe(1);

    expect(sent).toEqual([]);
    expect(events()).toMatchObject(event === undefined ? [] : [event]);
    expect(outcomes).toHaveLength(1);
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
  });

  it('ends a query on an error nobody expected ERR_QUERY_INTERNAL', async () => {
    const psid = await open('MRN-BUG');
    posts.set(psid, [new PortFailure(undefined)]);
    clock += DEBOUNCE_MS;
    expect(await tickAndSettle(scheduler())).toBe(1);
    expect(events()).toMatchObject([
      {
        status: 'failed',
        record_version: 1,
        error: {
          code: 'ERR_QUERY_INTERNAL',
          message: 'the query ended on an internal error (PortFailure)',
        },
      },
    ]);
    expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
  });

  describe('a query the service answers at once (Prevent)', () => {
    const answer = { recommendations: [{ rank: 1, factor: 'smoking' }] };
    /** Prepares the patient's run as a call: `outcomes` in order, each an answer or a failure. */
    const call = (psid: string, results: (object | PortFailure)[]) =>
      prepared.set(psid, {
        kind: 'call',
        recordVersion: 1,
        async call() {
          sent.push(psid);
          const next = results.shift() ?? answer;
          if (next instanceof PortFailure) throw next;
          return next as Record<string, unknown>;
        },
      });

    it('ends completed with the answer, unpolled, as a prevent.completed event counted apart', async () => {
      const psid = await open('MRN-PREVENT', 'ev-p', 'prevent');
      call(psid, [answer]);
      clock += DEBOUNCE_MS;
      expect(await tickAndSettle(scheduler())).toBe(1);
      expect(events()).toMatchObject([
        {
          type: 'prevent.completed',
          ccsr_category: 'prevent',
          status: 'completed',
          record_version: 1,
          remote_job_id: null,
          concordance: null,
          prevent: answer,
          error: null,
          patient_id: 'MRN-PREVENT',
        },
      ]);
      expect(await env.redis.zcard(pollSetKey(env.prefix))).toBe(0);
      expect(await env.redis.zcard(queryOutboxKey(env.prefix))).toBe(0);
      expect(await counted(metrics.preventRuns)).toEqual([
        expect.objectContaining({ labels: { outcome: 'completed' }, value: 1 }),
      ]);
      expect(await counted(metrics.queriesFinished)).toEqual([]);
    });

    it('retries a transient failure of the call, then delivers its answer', async () => {
      const psid = await open('MRN-PREVENT-5XX', 'ev-p5', 'prevent');
      const unavailable = new PortFailure({
        kind: 'transient',
        code: 'ERR_SERVICE_UNAVAILABLE',
        message: 'POST /v1/patient/{patient_service_id} answered 503',
      });
      call(psid, [unavailable, answer]);
      clock += DEBOUNCE_MS;
      const s = scheduler();
      expect(await tickAndSettle(s)).toBe(1);
      const member = `${psid}|prevent|1`;
      expect(await env.redis.zscore(queryOutboxKey(env.prefix), member)).toBe(
        String(clock + BACKOFF_MS),
      );
      expect(delivered).toEqual([]);
      clock += BACKOFF_MS;
      expect(await tickAndSettle(s)).toBe(1);
      expect(sent).toEqual([psid, psid]);
      expect(events()).toMatchObject([{ type: 'prevent.completed', prevent: answer }]);
    });

    it('ends a run refused before sending prevent.failed with its code, and no answer', async () => {
      const psid = await open('MRN-PREVENT-EMPTY', 'ev-pe', 'prevent');
      prepared.set(
        psid,
        new PortFailure({
          kind: 'refused',
          code: 'ERR_PREVENT_NO_DATA',
          message: 'the record holds no biomarker and no history item Prevent can use; not sent',
        }),
      );
      clock += DEBOUNCE_MS;
      expect(await tickAndSettle(scheduler())).toBe(1);
      expect(sent).toEqual([]);
      expect(events()).toMatchObject([
        {
          type: 'prevent.failed',
          status: 'rejected',
          prevent: null,
          error: { code: 'ERR_PREVENT_NO_DATA' },
        },
      ]);
      expect(await counted(metrics.preventRuns)).toEqual([
        expect.objectContaining({ labels: { outcome: 'rejected' }, value: 1 }),
      ]);
    });
  });
});
