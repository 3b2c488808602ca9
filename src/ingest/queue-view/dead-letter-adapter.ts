import { STATUSES } from '@bull-board/api/constants/statuses';
import type {
  JobCounts,
  JobStatus,
  QueueJob,
  QueueJobJson,
  Status,
} from '@bull-board/api/typings/app';
import type { DeadLetterStore } from '../../delivery/dead-letter-store.ts';
import type { DeadLetterSummary } from '../../delivery/dead-letter.ts';
import { ReadOnlyAdapter, readOnly } from './read-only-adapter.ts';

/** The queue name the letters are shown under, after the partition's prefix. */
export const DEAD_LETTERS = 'dead-letters';

const FAILED = 'failed' satisfies JobStatus;

const epochMs = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** A letter in the shape of a failed BullMQ job; its data is the summary (no patient named). */
function jobOf(letter: DeadLetterSummary): QueueJob {
  const { event, last_error: error } = letter;
  const json: QueueJobJson = {
    id: event.id,
    name: `${letter.channel} ${event.type}`,
    progress: 0,
    attemptsMade: letter.attempts,
    timestamp: Date.parse(event.created_at),
    processedOn: epochMs(letter.first_attempt_at),
    finishedOn: Date.parse(letter.dead_lettered_at),
    failedReason: `${error.code}${error.status === null ? '' : ` (HTTP ${error.status})`}: ${error.message}`,
    stacktrace: [],
    data: letter,
    returnvalue: null,
    opts: {},
  };
  return {
    opts: {},
    toJSON: () => json,
    getState: async () => FAILED,
    promote: async () => readOnly(),
    remove: async () => readOnly(),
    retry: async () => readOnly(),
  };
}

export interface DeadLetterAdapterOptions {
  /** The partition's store (read without the crosswalk keys: see `DeadLetterStore.summaries`). */
  store: DeadLetterStore;
  /** What the board calls the queue: the partition's key prefix and `:`. */
  prefix: string;
  displayName: string;
}

/**
 * A partition's dead letters as a read-only queue of bull-board: a dead-lettered delivery is no
 * BullMQ job (its job ends and leaves the queue, the letter goes to the dead-letter store), so
 * without this the view would not show it. Each letter is a failed job whose data is the letter's
 * summary: event id, type, category, channel, last error, attempts and times, never the patient.
 * Every change is refused ({@link ReadOnlyError}): `concordance-worker replay` re-drives letters.
 */
export class DeadLetterAdapter extends ReadOnlyAdapter {
  readonly #store: DeadLetterStore;

  constructor({ store, prefix, displayName }: DeadLetterAdapterOptions) {
    super('bullmq', {
      readOnlyMode: true,
      allowRetries: false,
      prefix,
      delimiter: ':',
      displayName,
      description:
        'Deliveries given up on (kept for `concordance-worker replay`); read-only, no patient named.',
    });
    this.#store = store;
  }

  getName(): string {
    return `${this.prefix}${DEAD_LETTERS}`;
  }

  async getRedisInfo(): Promise<string | null> {
    return null;
  }

  getStatuses(): Status[] {
    return ['latest', FAILED];
  }

  getJobStatuses(): JobStatus[] {
    return [FAILED];
  }

  async getJobCounts(): Promise<JobCounts> {
    const failed = await this.#store.count();
    return Object.fromEntries(
      Object.values(STATUSES).map((status) => [status, status === FAILED ? failed : 0]),
    ) as JobCounts;
  }

  async getJobs(statuses: JobStatus[], start = 0, end = -1): Promise<QueueJob[]> {
    if (!statuses.includes(FAILED)) return [];
    return (await this.#store.summaries(start, end)).map(jobOf);
  }

  async getJob(id: string): Promise<QueueJob | undefined> {
    const letter = await this.#store.summary(id);
    return letter === undefined ? undefined : jobOf(letter);
  }
}
