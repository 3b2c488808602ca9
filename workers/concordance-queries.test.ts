import { randomUUID } from 'node:crypto';
import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  queryJobOptions,
  submissionJobId,
  type SubmissionJobData,
} from '../src/queries/query-job.ts';
import { CONCORDANCE_QUERIES } from '../src/queues/queue-names.ts';
import {
  CATEGORY,
  DEBOUNCE_MS,
  PortFailure,
  RULES,
  SubmissionFixture,
} from '../test/support/submission-fixture.ts';
import { concordanceQueryProcessor, type SubmissionJobResult } from './concordance-queries.ts';

type SubmissionJob = Job<SubmissionJobData, SubmissionJobResult>;

/**
 * The processor of the `concordance-queries` queue, called directly with real BullMQ jobs: each
 * is added to a real queue on the test's prefix and taken (made active, locked with a token) by a
 * real worker that does not run by itself; the submission behind it is a real QuerySubmission on
 * the service's table of answers (see SubmissionFixture).
 */
describe('concordanceQueryProcessor (real BullMQ jobs, real Redis)', () => {
  let fx: SubmissionFixture;
  let queue: Queue<SubmissionJobData, SubmissionJobResult>;
  let worker: Worker<SubmissionJobData, SubmissionJobResult>;
  let token: string;

  beforeEach(async () => {
    fx = await SubmissionFixture.create(Date.now());
    const { redis: connection, prefix } = fx.env;
    queue = new Queue(CONCORDANCE_QUERIES, { connection, prefix });
    worker = new Worker(CONCORDANCE_QUERIES, null, { connection, prefix, autorun: false });
    token = randomUUID();
  });
  afterEach(async () => {
    await worker.close(true);
    await queue.close();
    await fx.cleanup();
  });

  const processor = () =>
    concordanceQueryProcessor({
      submission: fx.submission(),
      queue,
      signal: new AbortController().signal,
      logger: pino({ level: 'silent' }),
    });

  /** The submission job of query `seq` of the patient, as the outbox relay adds it. */
  const dataOf = (psid: string, seq = 1): SubmissionJobData => ({
    patientServiceId: psid,
    ccsrCategory: CATEGORY,
    seq,
    resubmits: 0,
    dueAt: fx.clock,
  });

  /** Adds a job with `data` and takes it as the worker would: active, locked with `token`. */
  async function take(
    data: SubmissionJobData,
    jobId = submissionJobId(data),
  ): Promise<SubmissionJob> {
    const added = await queue.add(CATEGORY, data, {
      ...queryJobOptions({ submit_attempts: RULES.submitAttempts, submit_backoff_ms: 1_000 }),
      jobId,
    });
    const job = await worker.getNextJob(token, { block: false });
    expect(job?.id).toBe(added.id);
    expect(await job?.getState()).toBe('active');
    return job as SubmissionJob;
  }

  /** Opens a patient's query and takes its job, due now. */
  async function openAndTake(mrn: string): Promise<{ psid: string; job: SubmissionJob }> {
    const psid = await fx.open(mrn);
    fx.clock += DEBOUNCE_MS;
    return { psid, job: await take(dataOf(psid)) };
  }

  /** What the processor throws for `job` (it must throw). */
  async function thrownBy(job: SubmissionJob): Promise<Error> {
    const error = await processor()(job, token).then(
      (result) => new Error(`resolved ${JSON.stringify(result)}`),
      (err: unknown) => err as Error,
    );
    expect(error.message).not.toMatch(/^resolved /);
    return error;
  }

  it('completes a submitted query with its remote job id', async () => {
    const { psid, job } = await openAndTake('MRN-OK');
    expect(await processor()(job, token)).toEqual({ remote_job_id: `job-${psid}-1` });
    expect(fx.sent).toEqual([psid]);
    expect((await fx.remoteOf(psid))?.remoteJobId).toBe(`job-${psid}-1`);

    // As the worker does with it: completed.
    await job.moveToCompleted({ remote_job_id: `job-${psid}-1` }, token, false);
    expect(await job.getState()).toBe('completed');
  });

  it('fails a query that failed for good with UnrecoverableError named by its code, its event delivered', async () => {
    const { psid, job } = await openAndTake('MRN-404');
    fx.posts.set(psid, [
      new PortFailure({
        kind: 'permanent',
        code: 'ERR_SERVICE_NOT_FOUND',
        message: 'POST /v1/concordance answered 404',
      }),
    ]);
    const error = await thrownBy(job);

    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(error.name).toBe('UnrecoverableError');
    expect(error.message).toBe('ERR_SERVICE_NOT_FOUND: POST /v1/concordance answered 404');
    expect(fx.events()).toMatchObject([
      {
        patient_service_id: psid,
        status: 'failed',
        error: { code: 'ERR_SERVICE_NOT_FOUND', message: 'POST /v1/concordance answered 404' },
      },
    ]);

    // As the worker does with it: failed at once, with attempts left.
    await job.moveToFailed(error, token);
    expect(await job.getState()).toBe('failed');
    expect(job.opts.attempts).toBe(RULES.submitAttempts);
  });

  it('rethrows a transient failure as it is, for BullMQ to retry after its backoff', async () => {
    const { psid, job } = await openAndTake('MRN-503');
    const unavailable = new PortFailure({
      kind: 'transient',
      code: 'ERR_SERVICE_UNAVAILABLE',
      message: 'POST /v1/concordance answered 503',
    });
    fx.posts.set(psid, [unavailable]);
    const error = await thrownBy(job);

    expect(error).toBe(unavailable);
    expect(error).not.toBeInstanceOf(UnrecoverableError);
    expect(await fx.env.redis.hget(fx.qs(psid), 'f:1')).toBe('1');
    expect(fx.delivered).toEqual([]);

    // As the worker does with it: retried later (the job's backoff), one attempt made.
    await job.moveToFailed(error, token);
    expect(await job.getState()).toBe('delayed');
    expect(job.attemptsMade).toBe(1);
  });

  it("holds the queue for a 429 (queue.rateLimit) and throws BullMQ's rate-limit error", async () => {
    const { psid, job } = await openAndTake('MRN-429');
    fx.posts.set(psid, [new PortFailure({ kind: 'rate_limited', retryAfterMs: 7_000 })]);
    expect(await queue.getRateLimitTtl()).toBeLessThanOrEqual(0);
    const error = await thrownBy(job);

    // What the worker recognizes to put the job back without counting an attempt.
    expect(error.name).toBe('RateLimitError');
    expect(error.message).toBe('bullmq:rateLimitExceeded');
    expect(error.message).toBe(Worker.RateLimitError().message);
    const ttl = await queue.getRateLimitTtl();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(7_000);
    expect(await fx.env.redis.hmget(fx.qs(psid), 'f:1', 's:1', 'l:1')).toEqual([null, null, null]);
    expect(fx.delivered).toEqual([]);
  });

  it("throws BullMQ's rate-limit error without a limit when the key is refused (the queue is paused)", async () => {
    const { psid, job } = await openAndTake('MRN-401');
    fx.posts.set(psid, [new PortFailure({ kind: 'auth_refused' })]);
    const error = await thrownBy(job);

    expect(error.name).toBe('RateLimitError');
    expect(error.message).toBe('bullmq:rateLimitExceeded');
    expect(fx.pauses).toBe(1);
    expect(await queue.getRateLimitTtl()).toBeLessThanOrEqual(0);
    expect(fx.delivered).toEqual([]);
  });

  it('delays the job until the birth date wait says and throws DelayedError', async () => {
    const { psid, job } = await openAndTake('MRN-NOBIRTH');
    fx.prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    const until = Date.now() + 3_600_000;
    fx.parked.set(psid, { kind: 'wait', until });
    const error = await thrownBy(job);

    expect(error).toBeInstanceOf(DelayedError);
    expect(error.name).toBe('DelayedError');
    expect(await job.getState()).toBe('delayed');
    // Not an attempt: a wait for a birth date is not a failure.
    const stored = await queue.getJob(job.id as string);
    expect(stored?.attemptsMade).toBe(0);
    expect(fx.sent).toEqual([]);
    expect(fx.delivered).toEqual([]);
  });

  it('fails a job whose data names no query with UnrecoverableError ERR_QUERY_JOB_DATA', async () => {
    const job = await take({ seq: 'one' } as unknown as SubmissionJobData, 'q-unreadable');
    const error = await thrownBy(job);

    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(error.message).toMatch(/^ERR_QUERY_JOB_DATA: /);
    expect(fx.sent).toEqual([]);
    expect(fx.delivered).toEqual([]);
  });

  it('completes the job of a stale query with outcome stale', async () => {
    const job = await take(dataOf('psid-never-opened'));
    expect(await processor()(job, token)).toEqual({ outcome: 'stale' });
    expect(fx.sent).toEqual([]);
    expect(fx.delivered).toEqual([]);
  });

  it('completes the job of a query ended without a failure with its outcome', async () => {
    const psid = await fx.open('MRN-REPLACED');
    fx.prepared.set(psid, new PortFailure({ kind: 'birth_date_missing' }));
    fx.parked.set(psid, { kind: 'replaced' });
    fx.clock += DEBOUNCE_MS;
    const job = await take(dataOf(psid));
    expect(await processor()(job, token)).toEqual({ outcome: 'superseded' });
    expect(fx.delivered).toEqual([]);
  });
});
