import { STATUSES } from '@bull-board/api/constants/statuses';
import type {
  JobCounts,
  JobStatus,
  QueueJob,
  QueueJobJson,
  Status,
} from '@bull-board/api/typings/app';
import type { ListedPoll, PollListing, PollListState } from '../../queries/poll-listing.ts';
import { ReadOnlyAdapter, readOnly } from './read-only-adapter.ts';

/** The queue name the polls are shown under, after the partition's prefix. */
export const QUERY_POLLS = 'query-polls';

/** A poll whose time has come, waiting for a poller to make it. */
const WAITING = 'waiting' satisfies JobStatus;
/** A poll whose time has not come yet. */
const DELAYED = 'delayed' satisfies JobStatus;

const STATE_OF: Record<typeof WAITING | typeof DELAYED, PollListState> = {
  [WAITING]: 'due',
  [DELAYED]: 'later',
};

/** Every change: the polls are the poll scheduler's (src/queries/poll-scheduler.ts). */

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * A poll in the shape of a BullMQ job: id the remote job's, name the CCSR category, added at its
 * submission, due (`timestamp + delay`) at its next poll, attempts its polls so far. Its data
 * repeats those and the age; no patient, and not the patient_service_id either.
 */
function jobOf(poll: ListedPoll, now: number, queueName: string): QueueJob {
  const state = poll.nextPollAt <= now ? WAITING : DELAYED;
  const delay = Math.max(0, poll.nextPollAt - poll.submittedAt);
  const json: QueueJobJson = {
    id: poll.remoteJobId,
    name: poll.ccsrCategory,
    progress: 0,
    attemptsMade: poll.polls,
    timestamp: poll.submittedAt,
    delay,
    processedOn: null,
    finishedOn: null,
    failedReason: '',
    stacktrace: [],
    data: {
      ccsr_category: poll.ccsrCategory,
      remote_job_id: poll.remoteJobId,
      query_id: poll.queryId,
      polls: poll.polls,
      next_poll_at: iso(poll.nextPollAt),
      submitted_at: iso(poll.submittedAt),
      age_s: Math.max(0, Math.floor((now - poll.submittedAt) / 1_000)),
      last_poll_at: iso(poll.lastPollAt),
      resubmits: poll.resubmits,
    },
    returnvalue: null,
    opts: { delay },
  };
  const job: QueueJob & { queueName: string } = {
    // What the board's flow lookup reads of a job (no parent: the poll is in no flow).
    queueName,
    opts: { delay },
    toJSON: () => json,
    getState: async () => state,
    promote: async () => readOnly(),
    remove: async () => readOnly(),
    retry: async () => readOnly(),
  };
  return job;
}

export interface PollsAdapterOptions {
  /** The partition's poll set, read a page at a time. */
  listing: PollListing;
  /** What the board calls the queue: the partition's key prefix and `:`. */
  prefix: string;
  displayName: string;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * A partition's queries being polled as a read-only queue of bull-board: a submitted query leaves
 * the `concordance-queries` queue (its job completes with the remote job id) and is polled from
 * the partition's poll set (`<prefix>:qpoll`), which is no BullMQ queue, so without this the view
 * would not show it. Each query is a job, `waiting` when its poll is due and `delayed` until then,
 * named by its category and identified by its remote job id, never by its patient. Every change is
 * refused ({@link ReadOnlyError}): the polls are the poll scheduler's.
 */
export class PollsAdapter extends ReadOnlyAdapter {
  readonly #listing: PollListing;
  readonly #now: () => number;

  constructor({ listing, prefix, displayName, now = Date.now }: PollsAdapterOptions) {
    super('bullmq', {
      readOnlyMode: true,
      allowRetries: false,
      prefix,
      delimiter: ':',
      displayName,
      description:
        'Submitted queries the service is still working on: waiting when their poll is due, delayed until their next poll. Read-only; no patient named.',
    });
    this.#listing = listing;
    this.#now = now;
  }

  getName(): string {
    return `${this.prefix}${QUERY_POLLS}`;
  }

  async getRedisInfo(): Promise<string | null> {
    return null;
  }

  getStatuses(): Status[] {
    return ['latest', WAITING, DELAYED];
  }

  getJobStatuses(): JobStatus[] {
    return [WAITING, DELAYED];
  }

  async getJobCounts(): Promise<JobCounts> {
    const { due, later } = await this.#listing.counts(this.#now());
    const count = (status: string) => (status === WAITING ? due : status === DELAYED ? later : 0);
    return Object.fromEntries(
      Object.values(STATUSES).map((status) => [status, count(status)]),
    ) as JobCounts;
  }

  /**
   * The page asked for of each status asked for (as BullMQ's `getJobs`), due ones first. A poll
   * leased between the two reads (its time moves to the lease's end) is shown once.
   */
  async getJobs(statuses: JobStatus[], start = 0, end = -1): Promise<QueueJob[]> {
    const now = this.#now();
    const shown = new Map<string, QueueJob>();
    for (const status of [WAITING, DELAYED] as const) {
      if (!statuses.includes(status)) continue;
      for (const poll of await this.#listing.page(STATE_OF[status], start, end, now)) {
        if (!shown.has(poll.remoteJobId)) {
          shown.set(poll.remoteJobId, jobOf(poll, now, this.getName()));
        }
      }
    }
    return [...shown.values()];
  }

  async getJob(id: string): Promise<QueueJob | undefined> {
    const poll = await this.#listing.find(id);
    return poll === undefined ? undefined : jobOf(poll, this.#now(), this.getName());
  }
}
