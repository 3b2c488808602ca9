/** What a polling status means for the caller. */
export type JobState = 'success' | 'failure' | 'lost' | 'pending';

/** The status values (compared case-insensitively) that mean each state. */
export interface JobStatusSets {
  /** @defaultValue `completed, complete, succeeded, success, synthesis_success, done` */
  success?: readonly string[];
  /** @defaultValue `failed, error, cancelled` */
  failure?: readonly string[];
  /** The job is gone; submitting again is the only way forward. @defaultValue `not_exists, not_found, expired` */
  lost?: readonly string[];
  /**
   * Values known to mean "still working". Any other unknown value is pending too, but gets
   * reported once so a new status from the service does not go unnoticed.
   * @defaultValue `pending, queued, submitted, accepted, scheduled, waiting, started, running, in_progress, processing`
   */
  pending?: readonly string[];
}

export const DEFAULT_JOB_STATUSES = {
  success: ['completed', 'complete', 'succeeded', 'success', 'synthesis_success', 'done'],
  failure: ['failed', 'error', 'cancelled'],
  lost: ['not_exists', 'not_found', 'expired'],
  pending: [
    'pending',
    'queued',
    'submitted',
    'accepted',
    'scheduled',
    'waiting',
    'started',
    'running',
    'in_progress',
    'processing',
  ],
} as const satisfies Required<JobStatusSets>;

const STATES = ['success', 'failure', 'lost', 'pending'] as const;

/** Maps the service's free-form job status strings onto {@link JobState}. */
export class JobStatusClassifier {
  readonly #states = new Map<string, JobState>();

  constructor(sets: JobStatusSets = {}) {
    for (const state of STATES) {
      for (const value of sets[state] ?? DEFAULT_JOB_STATUSES[state]) {
        const key = normalise(value);
        const previous = this.#states.get(key);
        // A value in two sets would make the outcome depend on declaration order: refuse it.
        if (previous !== undefined && previous !== state) {
          throw new TypeError(`job status "${value}" is listed as both ${previous} and ${state}`);
        }
        this.#states.set(key, state);
      }
    }
  }

  /** `known` is false when the value is in no set; the state is then `pending`. */
  classify(status: string): { state: JobState; known: boolean } {
    const state = this.#states.get(normalise(status));
    return state === undefined ? { state: 'pending', known: false } : { state, known: true };
  }
}

function normalise(value: string): string {
  return value.trim().toLowerCase();
}
