import type { ConcordanceOutline } from '../concordance/concordance-outline.ts';

/** How a job ends; drawn once at submission from the fault profile's job rates. */
export type JobOutcome = 'completed' | 'failed' | 'lost' | 'never_finish';

export type JobStatus = 'queued' | 'running' | 'completed' | 'failed' | 'not_exists';

/**
 * One job: three timestamps, the outcome and the compact outline of its result (never the
 * assembled patient), so 20,000 jobs in flight stay small; and how it has been read.
 */
interface JobRecord {
  readonly submittedAt: number;
  readonly runningAt: number;
  readonly finishAt: number;
  readonly outcome: JobOutcome;
  readonly outline: ConcordanceOutline;
  /** Status reads (`get`) of the job. */
  reads: number;
  /** When a read first found it completed or failed. */
  firstFinishedReadAt: number | null;
}

export interface JobView {
  status: JobStatus;
  /** Present when the job completed. */
  outline?: ConcordanceOutline;
}

/**
 * When a job was submitted and when it runs and ends (epoch ms), and how often its status was read
 * (a benchmark's polls per query and detection lag), for `GET /_admin/jobs/:id`.
 */
export interface JobTimeline {
  submittedAt: number;
  runningAt: number;
  finishAt: number;
  outcome: JobOutcome;
  /** Status reads so far. */
  reads: number;
  /** When a status read first found the job completed or failed; null until one did. */
  firstFinishedReadAt: number | null;
}

export interface JobStoreOptions {
  now: () => number;
  /** How long a finished job stays readable. */
  ttlMs: number;
}

/**
 * Concordance jobs. A job's state is derived from the clock when it is read: no timer per job.
 * Expired jobs are deleted when read and by a sweep that runs at most once per second (or once
 * per TTL when that is shorter) on any access, so memory follows the jobs in flight.
 */
export class JobStore {
  readonly #jobs = new Map<string, JobRecord>();
  readonly #now: () => number;
  readonly #ttlMs: number;
  #lastSweep: number;

  constructor(options: JobStoreOptions) {
    this.#now = options.now;
    this.#ttlMs = options.ttlMs;
    this.#lastSweep = options.now();
  }

  get size(): number {
    return this.#jobs.size;
  }

  /**
   * Adds a job submitted now that runs for `durationMs`: queued for its first quarter, then
   * running. A lost job vanishes when it would start running; one that never finishes is still
   * forgotten a TTL after its nominal end, like any finished job.
   */
  add(id: string, durationMs: number, outcome: JobOutcome, outline: ConcordanceOutline): void {
    const now = this.#now();
    this.#sweepIfDue(now);
    this.#jobs.set(id, {
      submittedAt: now,
      runningAt: now + Math.floor(durationMs / 4),
      finishAt: now + durationMs,
      outcome,
      outline,
      reads: 0,
      firstFinishedReadAt: null,
    });
  }

  get(id: string): JobView {
    const now = this.#now();
    this.#sweepIfDue(now);
    const job = this.#jobs.get(id);
    if (job === undefined) return { status: 'not_exists' };
    if (now >= this.#expiresAt(job)) {
      this.#jobs.delete(id);
      return { status: 'not_exists' };
    }
    job.reads += 1;
    if (now < job.runningAt) return { status: 'queued' };
    if (now < job.finishAt || job.outcome === 'never_finish') return { status: 'running' };
    job.firstFinishedReadAt ??= now;
    if (job.outcome === 'failed') return { status: 'failed' };
    return { status: 'completed', outline: job.outline };
  }

  /** The job's timeline, read without moving its state (a benchmark measures detection lag). */
  timeline(id: string): JobTimeline | undefined {
    const job = this.#jobs.get(id);
    if (job === undefined) return undefined;
    const { submittedAt, runningAt, finishAt, outcome, reads, firstFinishedReadAt } = job;
    return { submittedAt, runningAt, finishAt, outcome, reads, firstFinishedReadAt };
  }

  #expiresAt(job: JobRecord): number {
    return job.outcome === 'lost' ? job.runningAt : job.finishAt + this.#ttlMs;
  }

  #sweepIfDue(now: number): void {
    if (now - this.#lastSweep < Math.min(this.#ttlMs, 1000)) return;
    this.#lastSweep = now;
    for (const [id, job] of this.#jobs) {
      if (now >= this.#expiresAt(job)) this.#jobs.delete(id);
    }
  }
}
