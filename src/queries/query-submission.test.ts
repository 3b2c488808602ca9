import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PatientConsent } from '../privacy/patient-consent.ts';
import {
  CATEGORY,
  counted,
  DEBOUNCE_MS,
  PARK_MS,
  PortFailure,
  RULES,
  SCHEDULE,
  SubmissionFixture,
} from '../../test/support/submission-fixture.ts';
import { pollSetKey, type PolledRemoteJob } from './poll-set.ts';
import type { SubmitFailure } from './query-lifecycle.ts';
import { outboxMember, queryOutboxKey } from './query-outbox.ts';
import type { QuerySubmission } from './query-submission.ts';
import type { ClaimedQuery } from './submission-store.ts';

/**
 * One query's submission (what a job of the `concordance-queries` queue runs) against real Redis:
 * queries are opened the way ingest opens them, the service and the record preparation are tables
 * of answers per patient (the ports' contract), the per-query state is the real SubmissionStore's
 * and the remote job the real QueryState's. When a query runs (its job's delay, its retries'
 * backoff, the queue's concurrency) is BullMQ's: here each run is one call of `run`.
 */
describe('QuerySubmission (real Redis)', () => {
  let fx: SubmissionFixture;
  let submission: QuerySubmission;

  beforeEach(async () => {
    fx = await SubmissionFixture.create();
    submission = fx.submission();
  });
  afterEach(() => fx.cleanup());

  const run = (psid: string, seq = 1, category = CATEGORY) =>
    submission.run(
      { patientServiceId: psid, ccsrCategory: category, seq },
      fx.clock,
      new AbortController().signal,
    );
  const redis = () => fx.env.redis;
  const outboxSize = () => redis().zcard(queryOutboxKey(fx.env.prefix));
  const pollDue = (psid: string, seq = 1) =>
    redis().zscore(
      pollSetKey(fx.env.prefix),
      outboxMember({ patientServiceId: psid, ccsrCategory: CATEGORY, seq }),
    );
  /** A worker that claims the query (its run begins) and dies holding it. */
  const deadWorkerClaims = async (psid: string, seq = 1): Promise<ClaimedQuery> => {
    const claimed = await fx.store.claim(fx.query(psid, seq), fx.clock, randomUUID());
    expect(claimed).toBeDefined();
    return claimed as ClaimedQuery;
  };

  it('submits a query, storing its remote job and first poll; run again, it is not sent twice', async () => {
    const psid = await fx.open('MRN-1');
    expect(await outboxSize()).toBe(1);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-1` });

    expect(fx.sent).toEqual([psid]);
    const queryId = await redis().hget(fx.qs(psid), 'i:1');
    expect(queryId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await fx.remoteOf(psid)).toEqual({
      remoteJobId: `job-${psid}-1`,
      submittedAt: fx.clock,
      resubmits: 0,
      recordVersion: 1,
      queryId,
      polls: 0,
    });
    // Out of the outbox, into the due set of polls after first_delay_ms.
    expect(await outboxSize()).toBe(0);
    expect(await pollDue(psid)).toBe(String(fx.clock + SCHEDULE.firstDelayMs));
    expect(await redis().hget(fx.qs(psid), 'submitted')).toBe('1');
    // The claimed triggers stay for the result event; the attempt's marks are gone.
    expect(JSON.parse((await redis().hget(fx.qs(psid), 'c:1')) ?? 'null')).toMatchObject({
      eventIds: ['ev-MRN-1'],
      count: 1,
    });
    expect(await redis().hmget(fx.qs(psid), 's:1', 'l:1', 'f:1')).toEqual([null, null, null]);
    expect(fx.delivered).toEqual([]);
    expect(fx.outcomes).toEqual([]);
    expect(await counted(fx.metrics.submitWindow)).toContainEqual(
      expect.objectContaining({ metricName: 'cw_submit_window_seconds_count', value: 1 }),
    );

    // Its job runs again (say it stalled after the POST): the stored remote job is found.
    fx.clock += 60_000;
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-1` });
    expect(fx.sent).toHaveLength(1);
    expect((await fx.remoteOf(psid))?.queryId).toBe(queryId);
  });

  it('ends a query without a stored record ERR_RECORD_MISSING, with an event, unsent', async () => {
    // A producer that stores no record (QueryState.schedule): no record, no crosswalk entry.
    const bare = 'psid-without-record';
    await fx.stack.state.schedule(bare, CATEGORY, { eventId: 'ev-bare', at: 'x' }, fx.clock);
    // A record is stored but cannot be opened any more (prepare finds nothing).
    const unreadable = await fx.open('MRN-UNREADABLE');
    fx.prepared.set(unreadable, { kind: 'missing' });
    fx.clock += DEBOUNCE_MS;
    const missing = {
      kind: 'ended',
      outcome: 'rejected',
      failure: { code: 'ERR_RECORD_MISSING', message: 'no record is stored for this patient' },
    };
    expect(await run(bare)).toEqual(missing);
    expect(await run(unreadable)).toEqual(missing);

    expect(fx.sent).toEqual([]);
    // One delivery per query, one event each.
    expect(fx.delivered.map((batch) => batch.length)).toEqual([1, 1]);
    const byPatient = new Map(fx.events().map((e) => [e.patient_service_id, e]));
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
    expect(fx.outcomes.map((o) => o.eventId).sort()).toEqual(
      fx
        .events()
        .map((e) => e.id)
        .sort(),
    );
    // Ended and forgotten.
    expect(await outboxSize()).toBe(0);
    for (const psid of [bare, unreadable]) {
      expect(await redis().hmget(fx.qs(psid), 'c:1', 'i:1', 'l:1')).toEqual([null, null, null]);
    }
    expect(await counted(fx.metrics.queriesFinished)).toEqual([
      expect.objectContaining({ labels: { outcome: 'rejected' }, value: 2 }),
    ]);
  });

  it('ends a refused or permanently failed submission with its code, sent once', async () => {
    const items = [{ loc: ['body', 'ccsr_category'], msg: 'unknown', type: 'value_error' }];
    const invalid = await fx.open('MRN-422');
    fx.posts.set(invalid, [
      new PortFailure({
        kind: 'refused',
        code: 'ERR_SERVICE_VALIDATION',
        message: 'the service refused the body',
        items,
      }),
    ]);
    const notFound = await fx.open('MRN-404');
    fx.posts.set(notFound, [
      new PortFailure({
        kind: 'permanent',
        code: 'ERR_SERVICE_NOT_FOUND',
        message: 'POST /v1/concordance answered 404',
      }),
    ]);
    // Refused before anything is sent: the record leaks an identifier.
    const leaking = await fx.open('MRN-LEAK');
    fx.prepared.set(
      leaking,
      new PortFailure({ kind: 'refused', code: 'ERR_IDENTIFIER_LEAK', message: 'a local id' }),
    );
    fx.clock += DEBOUNCE_MS;

    expect(await run(invalid)).toEqual({
      kind: 'ended',
      outcome: 'rejected',
      failure: { code: 'ERR_SERVICE_VALIDATION', message: 'the service refused the body' },
    });
    expect(await run(notFound)).toEqual({
      kind: 'ended',
      outcome: 'failed',
      failure: { code: 'ERR_SERVICE_NOT_FOUND', message: 'POST /v1/concordance answered 404' },
    });
    expect(await run(leaking)).toEqual({
      kind: 'ended',
      outcome: 'rejected',
      failure: { code: 'ERR_IDENTIFIER_LEAK', message: 'a local id' },
    });

    expect(fx.sent).toEqual([invalid, notFound]);
    expect(fx.delivered).toHaveLength(3);
    const byPatient = new Map(fx.events().map((e) => [e.patient_service_id, e]));
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
    expect(await outboxSize()).toBe(0);

    // Nothing comes back: run again (a job added twice), they are stale and never sent again.
    fx.clock += 60_000;
    for (const psid of [invalid, notFound, leaking])
      expect(await run(psid)).toEqual({ kind: 'stale' });
    expect(fx.sent).toHaveLength(2);
    expect(fx.delivered).toHaveLength(3);
  });

  it('retries a transient failure, counting it, until submit_attempts ends it failed', async () => {
    const psid = await fx.open('MRN-5XX');
    const unavailable = () =>
      new PortFailure({
        kind: 'transient',
        code: 'ERR_SERVICE_UNAVAILABLE',
        message: 'POST /v1/concordance answered 503',
      });
    const failures = [unavailable(), unavailable(), unavailable()];
    fx.posts.set(psid, [...failures]);
    fx.clock += DEBOUNCE_MS;

    // Attempt 1 fails: retried (BullMQ's backoff), one failure counted, the attempt over.
    expect(await run(psid)).toEqual({ kind: 'retry', error: failures[0] });
    expect(await redis().hmget(fx.qs(psid), 'f:1', 's:1', 'l:1')).toEqual(['1', null, null]);
    expect(fx.delivered).toEqual([]);

    // Attempt 2 fails: two counted.
    fx.clock += 1_000;
    const second = await run(psid);
    expect(second).toEqual({ kind: 'retry', error: failures[1] });
    expect(second.kind === 'retry' && second.error).toBe(failures[1]);
    expect(await redis().hmget(fx.qs(psid), 'f:1', 's:1', 'l:1')).toEqual(['2', null, null]);
    expect(fx.delivered).toEqual([]);

    // Attempt 3 is the last: the query ends failed, saying how many.
    fx.clock += 2_000;
    expect(await run(psid)).toEqual({
      kind: 'ended',
      outcome: 'failed',
      failure: {
        code: 'ERR_SERVICE_UNAVAILABLE',
        message: `POST /v1/concordance answered 503 (after ${RULES.submitAttempts} attempts)`,
      },
    });
    expect(fx.sent).toEqual([psid, psid, psid]);
    expect(fx.events()).toMatchObject([
      {
        status: 'failed',
        error: {
          code: 'ERR_SERVICE_UNAVAILABLE',
          message: 'POST /v1/concordance answered 503 (after 3 attempts)',
        },
      },
    ]);
    expect(await outboxSize()).toBe(0);
    expect(await redis().hmget(fx.qs(psid), 'f:1', 'c:1')).toEqual([null, null]);
    // A 503 came back: nothing was possibly sent twice.
    expect(await counted(fx.metrics.possibleDuplicates)).toEqual([]);
    expect(await counted(fx.metrics.queriesFinished)).toEqual([
      expect.objectContaining({ labels: { outcome: 'failed' }, value: 1 }),
    ]);
  });

  it('counts a retried submission that may have reached the service as a possible duplicate', async () => {
    const psid = await fx.open('MRN-TIMEOUT');
    const timeout: SubmitFailure = {
      kind: 'transient',
      code: 'ERR_SERVICE_TIMEOUT',
      message: 'no answer',
    };
    fx.posts.set(psid, [new PortFailure(timeout, 'timeout')]);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toMatchObject({ kind: 'retry' });
    fx.clock += 1_000;
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-2` });

    expect(fx.sent).toEqual([psid, psid]);
    expect((await fx.remoteOf(psid))?.remoteJobId).toBe(`job-${psid}-2`);
    // Counted once, for the timeout; the retry itself was not an interrupted attempt.
    expect(await counted(fx.metrics.possibleDuplicates)).toEqual([
      expect.objectContaining({ labels: { reason: 'timeout' }, value: 1 }),
    ]);
  });

  it('answers rate_limited for a 429 with its Retry-After, without counting an attempt', async () => {
    const psid = await fx.open('MRN-429');
    fx.posts.set(psid, [new PortFailure({ kind: 'rate_limited', retryAfterMs: 7_000 })]);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toEqual({ kind: 'rate_limited', ms: 7_000 });

    // No attempt counted, the attempt over (the 429 answered), the query still claimed.
    expect(await redis().hmget(fx.qs(psid), 'f:1', 's:1', 'l:1')).toEqual([null, null, null]);
    expect(await redis().hget(fx.qs(psid), 'c:1')).not.toBeNull();
    expect(await fx.remoteOf(psid)).toBeUndefined();
    expect(fx.delivered).toEqual([]);
    expect(fx.outcomes).toEqual([]);

    // Its job runs again once the queue's limit is over: sent again, and it goes through.
    fx.clock += 7_000;
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-2` });
    expect(fx.sent).toEqual([psid, psid]);
    // The 429 answered: the second attempt was not an interrupted one.
    expect(await counted(fx.metrics.possibleDuplicates)).toEqual([]);
  });

  it('answers rate_limited for a 429 without Retry-After with the default wait', async () => {
    const psid = await fx.open('MRN-429-BARE');
    fx.posts.set(psid, [new PortFailure({ kind: 'rate_limited' })]);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toEqual({ kind: 'rate_limited', ms: 5_000 });
    expect(await redis().hget(fx.qs(psid), 'f:1')).toBeNull();
  });

  it('pauses for a refused API key, keeping the query uncounted, then sends it', async () => {
    const psid = await fx.open('MRN-401');
    fx.posts.set(psid, [new PortFailure({ kind: 'auth_refused' })]);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toEqual({ kind: 'paused' });

    expect(fx.pauses).toBe(1);
    expect(await redis().hmget(fx.qs(psid), 'f:1', 's:1', 'l:1')).toEqual([null, null, null]);
    expect(await redis().hget(fx.qs(psid), 'c:1')).not.toBeNull();
    expect(fx.delivered).toEqual([]);
    expect(fx.outcomes).toEqual([]);
    // A worker with a valid key resumes the queue: the job runs again.
    fx.clock += RULES.authPauseMs;
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-2` });
    expect(fx.sent).toEqual([psid, psid]);
    expect(fx.pauses).toBe(1);
    expect(await counted(fx.metrics.possibleDuplicates)).toEqual([]);
  });

  it("ends an opted-out patient's query ERR_PATIENT_OPTED_OUT without preparing or sending it", async () => {
    const psid = await fx.open('MRN-OPTOUT');
    await new PatientConsent({ redis: redis(), prefix: fx.env.prefix }).optOut(psid);
    let preparedAny = false;
    fx.whilePreparing.set(psid, async () => {
      preparedAny = true;
    });
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toEqual({
      kind: 'ended',
      outcome: 'rejected',
      failure: { code: 'ERR_PATIENT_OPTED_OUT', message: 'the patient opted out' },
    });

    expect(preparedAny).toBe(false);
    expect(fx.sent).toEqual([]);
    expect(fx.events()).toMatchObject([
      {
        status: 'rejected',
        patient_id: 'MRN-OPTOUT',
        error: { code: 'ERR_PATIENT_OPTED_OUT' },
      },
    ]);
    expect(await outboxSize()).toBe(0);
    expect(await redis().hget(fx.qs(psid), 'c:1')).toBeNull();
  });

  it('puts a query whose remote job another attempt stored meanwhile to polling, unsent', async () => {
    const psid = await fx.open('MRN-STORED');
    fx.clock += DEBOUNCE_MS;
    // A first run claims the query and sends it; its POST is slow and its lock runs out.
    const first = await deadWorkerClaims(psid);
    expect(await fx.store.begin(first)).toEqual({ state: 'new' });
    // While this run prepares the query, the first run's POST answers and is stored.
    const remote: PolledRemoteJob = {
      remoteJobId: 'job-first-worker',
      submittedAt: fx.clock,
      resubmits: 0,
      recordVersion: 1,
      queryId: first.queryId,
      polls: 0,
    };
    fx.whilePreparing.set(psid, () =>
      fx.stack.state.markSubmitted(psid, CATEGORY, 1, remote, fx.clock + SCHEDULE.firstDelayMs),
    );
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: 'job-first-worker' });

    expect(fx.sent).toEqual([]);
    expect(await fx.remoteOf(psid)).toEqual(remote);
    expect(await pollDue(psid)).not.toBeNull();
    expect(await outboxSize()).toBe(0);
    expect(fx.delivered).toEqual([]);
    expect(fx.outcomes).toEqual([]);
    expect(await counted(fx.metrics.possibleDuplicates)).toEqual([]);
  });

  it('sends again an attempt begun but never stored (its worker died), counted worker_restart', async () => {
    const psid = await fx.open('MRN-DIED');
    fx.clock += DEBOUNCE_MS;
    // A run claims the query, marks its submission begun, and dies during the POST.
    const first = await deadWorkerClaims(psid);
    expect(await fx.store.begin(first)).toEqual({ state: 'new' });
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-1` });

    expect(fx.sent).toEqual([psid]);
    // Same query, same id: its event (if any) is the one the first run would have sent.
    expect(await fx.remoteOf(psid)).toMatchObject({
      remoteJobId: `job-${psid}-1`,
      queryId: first.queryId,
    });
    expect(await pollDue(psid)).not.toBeNull();
    expect(await counted(fx.metrics.possibleDuplicates)).toEqual([
      expect.objectContaining({ labels: { reason: 'worker_restart' }, value: 1 }),
    ]);
  });

  it('forgets a query superseded by a newer submitted one of its key, unsent', async () => {
    const psid = await fx.open('MRN-SUP');
    // The first query waits for a birth date (its job delayed PARK_MS).
    fx.prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid, 1)).toEqual({ kind: 'later', at: fx.clock + PARK_MS });
    // A newer update opens query 2, which is sent first.
    fx.prepared.delete(psid);
    await fx.update(psid, 'ev-2', 58);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid, 2)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-1` });
    expect(await redis().hget(fx.qs(psid), 'submitted')).toBe('2');

    // Query 1's job runs again: superseded, it ends without a POST nor an event.
    fx.clock += PARK_MS;
    expect(await run(psid, 1)).toEqual({ kind: 'ended', outcome: 'superseded' });
    expect(fx.sent).toEqual([psid]);
    expect(fx.outcomes.map((o) => [o.data.seq, o.decision, o.eventId])).toEqual([
      [1, { kind: 'forget', countAs: 'superseded' }, null],
    ]);
    expect(fx.delivered).toEqual([]);
    expect(await redis().hget(fx.qs(psid), 'c:1')).toBeNull();
    expect(await fx.remoteOf(psid, 2)).toBeDefined();
    expect(await counted(fx.metrics.queriesFinished)).toEqual([
      expect.objectContaining({ labels: { outcome: 'superseded' }, value: 1 }),
    ]);
  });

  it.each([
    { deadWorkers: 1, leases: 2, stalled: false },
    { deadWorkers: 2, leases: 3, stalled: true },
  ])(
    'max_stalled_count 1, $deadWorkers dead worker(s) (lease $leases): stalled $stalled',
    async ({ deadWorkers, stalled }) => {
      const psid = await fx.open('MRN-STALL');
      fx.clock += DEBOUNCE_MS;
      for (let i = 0; i < deadWorkers; i++) await deadWorkerClaims(psid);
      const step = await run(psid);

      if (!stalled) {
        expect(step).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-1` });
        expect(fx.sent).toEqual([psid]);
        expect(fx.delivered).toEqual([]);
        return;
      }
      const message = "the query's worker stopped more than 1 times while it ran";
      expect(step).toEqual({
        kind: 'ended',
        outcome: 'failed',
        failure: { code: 'ERR_QUERY_STALLED', message },
      });
      expect(fx.sent).toEqual([]);
      expect(fx.events()).toMatchObject([
        {
          status: 'failed',
          patient_id: 'MRN-STALL',
          error: { code: 'ERR_QUERY_STALLED', message },
        },
      ]);
      expect(await outboxSize()).toBe(0);
      expect(await redis().hmget(fx.qs(psid), 'l:1', 'c:1')).toEqual([null, null]);
    },
  );

  it('forgets a superseded query even when its workers died with it (as on the poll side)', async () => {
    const psid = await fx.open('MRN-SUP-STALL');
    fx.prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid, 1)).toMatchObject({ kind: 'later' });
    fx.prepared.delete(psid);
    await fx.update(psid, 'ev-2', 58);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid, 2)).toMatchObject({ kind: 'submitted' });
    // Query 1's job runs again and two workers die holding it.
    fx.clock += PARK_MS;
    for (let i = 0; i < 2; i++) await deadWorkerClaims(psid, 1);
    expect(await run(psid, 1)).toEqual({ kind: 'ended', outcome: 'superseded' });

    expect(fx.outcomes.map((o) => [o.data.seq, o.decision.kind])).toEqual([[1, 'forget']]);
    expect(fx.delivered).toEqual([]);
    expect(fx.sent).toEqual([psid]);
  });

  it("ends an opted-out patient's stalled query ERR_PATIENT_OPTED_OUT, unsent", async () => {
    const psid = await fx.open('MRN-OPTOUT-STALL');
    fx.clock += DEBOUNCE_MS;
    for (let i = 0; i < 2; i++) await deadWorkerClaims(psid);
    await new PatientConsent({ redis: redis(), prefix: fx.env.prefix }).optOut(psid);
    expect(await run(psid)).toMatchObject({
      kind: 'ended',
      outcome: 'rejected',
      failure: { code: 'ERR_PATIENT_OPTED_OUT' },
    });
    expect(fx.sent).toEqual([]);
    expect(fx.events()).toMatchObject([
      { status: 'rejected', error: { code: 'ERR_PATIENT_OPTED_OUT' } },
    ]);
  });

  it("counts BullMQ's attempts when it counted more (one lost outside the lifecycle): the last one ends the query with its event", async () => {
    const psid = await fx.open('MRN-LOST-ATTEMPT');
    fx.posts.set(psid, [
      new PortFailure({
        kind: 'transient',
        code: 'ERR_SERVICE_UNAVAILABLE',
        message: 'POST /v1/concordance answered 503',
      }),
    ]);
    fx.clock += DEBOUNCE_MS;
    // Two attempts of the job failed before the lifecycle counted them (a Redis error, say).
    const job = { attemptsMade: RULES.submitAttempts - 1, stalledCounter: 0 };
    const step = await submission.run(fx.query(psid), fx.clock, new AbortController().signal, job);
    expect(step).toMatchObject({
      kind: 'ended',
      outcome: 'failed',
      failure: { code: 'ERR_SERVICE_UNAVAILABLE' },
    });
    expect(fx.events()).toMatchObject([{ status: 'failed' }]);
  });

  it("counts BullMQ's stalls when it counted more (a retry cleared the runs): ends ERR_QUERY_STALLED with its event", async () => {
    const psid = await fx.open('MRN-STALL-JOB');
    fx.clock += DEBOUNCE_MS;
    const job = { attemptsMade: 1, stalledCounter: RULES.maxStalledCount + 1 };
    const step = await submission.run(fx.query(psid), fx.clock, new AbortController().signal, job);
    expect(step).toMatchObject({ kind: 'ended', failure: { code: 'ERR_QUERY_STALLED' } });
    expect(fx.sent).toEqual([]);
    expect(fx.events()).toMatchObject([{ error: { code: 'ERR_QUERY_STALLED' } }]);
  });

  it('ends a query stalled at once with max_stalled_count 0 after one dead worker', async () => {
    const psid = await fx.open('MRN-STALL0');
    fx.clock += DEBOUNCE_MS;
    await deadWorkerClaims(psid);
    submission = fx.submission({ maxStalledCount: 0 });
    expect(await run(psid)).toEqual({
      kind: 'ended',
      outcome: 'failed',
      failure: {
        code: 'ERR_QUERY_STALLED',
        message: "the query's worker stopped more than 0 times while it ran",
      },
    });
    expect(fx.sent).toEqual([]);
    expect(fx.events()).toMatchObject([{ error: { code: 'ERR_QUERY_STALLED' } }]);
  });

  it('waits for a birth date (later, at what park says), uncounted, then sends the query', async () => {
    const psid = await fx.open('MRN-WAIT');
    fx.prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    fx.parked.set(psid, { kind: 'wait', until: fx.clock + 42_000 });
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toEqual({ kind: 'later', at: fx.clock - DEBOUNCE_MS + 42_000 });

    expect(fx.sent).toEqual([]);
    expect(fx.delivered).toEqual([]);
    expect(fx.outcomes).toEqual([]);
    expect(await redis().hmget(fx.qs(psid), 'f:1', 's:1', 'l:1')).toEqual([null, null, null]);
    expect(await redis().hget(fx.qs(psid), 'c:1')).not.toBeNull();

    // The birth date arrived: the delayed job runs again and the query is sent.
    fx.prepared.delete(psid);
    fx.clock += 40_000;
    expect(await run(psid)).toEqual({ kind: 'submitted', remoteJobId: `job-${psid}-1` });
    expect(await counted(fx.metrics.possibleDuplicates)).toEqual([]);
  });

  it.each([
    {
      wait: { kind: 'expired' } as const,
      step: {
        kind: 'ended',
        outcome: 'failed',
        failure: {
          code: 'ERR_RECORD_WAITING_EXPIRED',
          message: 'no birth date arrived within 60 s; not sent',
        },
      },
      event: { status: 'failed', error: { code: 'ERR_RECORD_WAITING_EXPIRED' } },
    },
    {
      wait: { kind: 'replaced' } as const,
      step: { kind: 'ended', outcome: 'superseded' },
      event: undefined,
    },
  ])(
    'ends a query without a birth date when its wait is $wait.kind',
    async ({ wait, step, event }) => {
      const psid = await fx.open('MRN-NOBIRTH');
      fx.prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
      fx.parked.set(psid, wait);
      fx.clock += DEBOUNCE_MS;
      expect(await run(psid)).toEqual(step);

      expect(fx.sent).toEqual([]);
      expect(fx.events()).toMatchObject(event === undefined ? [] : [event]);
      expect(fx.outcomes).toHaveLength(1);
      expect(await outboxSize()).toBe(0);
      expect(await redis().hget(fx.qs(psid), 'c:1')).toBeNull();
    },
  );

  it('ends a query on an error nobody expected ERR_QUERY_INTERNAL', async () => {
    const psid = await fx.open('MRN-BUG');
    fx.posts.set(psid, [new PortFailure(undefined)]);
    fx.clock += DEBOUNCE_MS;
    const message = 'the query ended on an internal error (PortFailure)';
    expect(await run(psid)).toEqual({
      kind: 'ended',
      outcome: 'failed',
      failure: { code: 'ERR_QUERY_INTERNAL', message },
    });
    expect(fx.events()).toMatchObject([
      {
        status: 'failed',
        record_version: 1,
        error: { code: 'ERR_QUERY_INTERNAL', message },
      },
    ]);
    expect(await outboxSize()).toBe(0);
  });

  it('answers stale for a query never opened or already ended, writing nothing', async () => {
    // Never opened (its patient was purged, say): nothing to claim.
    expect(await run('psid-unknown')).toEqual({ kind: 'stale' });
    expect(await redis().exists(fx.qs('psid-unknown'))).toBe(0);

    // Opened, but a later seq than the one open: stale too, and the open one is untouched.
    const psid = await fx.open('MRN-STALE');
    const before = await redis().hgetall(fx.qs(psid));
    expect(await run(psid, 2)).toEqual({ kind: 'stale' });
    expect(await redis().hgetall(fx.qs(psid))).toEqual(before);

    // Ended elsewhere (opted out here): its job running again finds nothing.
    await new PatientConsent({ redis: redis(), prefix: fx.env.prefix }).optOut(psid);
    fx.clock += DEBOUNCE_MS;
    expect(await run(psid)).toMatchObject({ kind: 'ended' });
    const ended = await redis().hgetall(fx.qs(psid));
    expect(await run(psid)).toEqual({ kind: 'stale' });
    expect(await redis().hgetall(fx.qs(psid))).toEqual(ended);
    expect(fx.sent).toEqual([]);
    expect(fx.delivered).toHaveLength(1);
  });

  describe('a query the service answers at once (Prevent)', () => {
    const answer = { recommendations: [{ rank: 1, factor: 'smoking' }] };
    /** Prepares the patient's run as a call: `results` in order, each an answer or a failure. */
    const call = (psid: string, results: (object | PortFailure)[]) =>
      fx.prepared.set(psid, {
        kind: 'call',
        recordVersion: 1,
        async call() {
          fx.sent.push(psid);
          const next = results.shift() ?? answer;
          if (next instanceof PortFailure) throw next;
          return next as Record<string, unknown>;
        },
      });

    it('ends completed with the answer, unpolled, as a prevent.completed event counted apart', async () => {
      const psid = await fx.open('MRN-PREVENT', 'ev-p', 'prevent');
      call(psid, [answer]);
      fx.clock += DEBOUNCE_MS;
      expect(await run(psid, 1, 'prevent')).toEqual({ kind: 'ended', outcome: 'completed' });
      expect(fx.events()).toMatchObject([
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
      expect(await redis().zcard(pollSetKey(fx.env.prefix))).toBe(0);
      expect(await outboxSize()).toBe(0);
      expect(await counted(fx.metrics.preventRuns)).toEqual([
        expect.objectContaining({ labels: { outcome: 'completed' }, value: 1 }),
      ]);
      expect(await counted(fx.metrics.queriesFinished)).toEqual([]);
    });

    it('retries a transient failure of the call, then delivers its answer', async () => {
      const psid = await fx.open('MRN-PREVENT-5XX', 'ev-p5', 'prevent');
      const unavailable = new PortFailure({
        kind: 'transient',
        code: 'ERR_SERVICE_UNAVAILABLE',
        message: 'POST /v1/patient/{patient_service_id} answered 503',
      });
      call(psid, [unavailable, answer]);
      fx.clock += DEBOUNCE_MS;
      expect(await run(psid, 1, 'prevent')).toEqual({ kind: 'retry', error: unavailable });
      expect(await redis().hget(fx.qs(psid, 'prevent'), 'f:1')).toBe('1');
      expect(fx.delivered).toEqual([]);
      fx.clock += 1_000;
      expect(await run(psid, 1, 'prevent')).toEqual({ kind: 'ended', outcome: 'completed' });
      expect(fx.sent).toEqual([psid, psid]);
      expect(fx.events()).toMatchObject([{ type: 'prevent.completed', prevent: answer }]);
    });

    it('ends a run refused before sending prevent.failed with its code, and no answer', async () => {
      const psid = await fx.open('MRN-PREVENT-EMPTY', 'ev-pe', 'prevent');
      const message = 'the record holds no biomarker and no history item Prevent can use; not sent';
      fx.prepared.set(
        psid,
        new PortFailure({ kind: 'refused', code: 'ERR_PREVENT_NO_DATA', message }),
      );
      fx.clock += DEBOUNCE_MS;
      expect(await run(psid, 1, 'prevent')).toEqual({
        kind: 'ended',
        outcome: 'rejected',
        failure: { code: 'ERR_PREVENT_NO_DATA', message },
      });
      expect(fx.sent).toEqual([]);
      expect(fx.events()).toMatchObject([
        {
          type: 'prevent.failed',
          status: 'rejected',
          prevent: null,
          error: { code: 'ERR_PREVENT_NO_DATA' },
        },
      ]);
      expect(await counted(fx.metrics.preventRuns)).toEqual([
        expect.objectContaining({ labels: { outcome: 'rejected' }, value: 1 }),
      ]);
    });
  });
});
