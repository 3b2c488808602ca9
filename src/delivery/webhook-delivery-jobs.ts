import type { Queue } from 'bullmq';
import { WEBHOOK_JOB_OPTIONS, type WebhookJobData } from './webhook-deliveries-queue.ts';
import type { WebhookDeliveryStore } from './webhook-delivery-store.ts';

/**
 * Keeps the queue's jobs in step with the delivery store: adds an event's job (idempotently, by
 * its job id) and wakes a job parked behind its key's previous event.
 */
export class WebhookDeliveryJobs {
  readonly #queue: Queue<WebhookJobData>;
  readonly #store: WebhookDeliveryStore;

  constructor(queue: Queue<WebhookJobData>, store: WebhookDeliveryStore) {
    this.#queue = queue;
    this.#store = store;
  }

  /** Adds the job; a no-op while a job of that id exists. */
  async add(eventId: string, queryKey: string, jobId: string): Promise<void> {
    await this.#queue.add(
      'deliver',
      { event_id: eventId, query_key: queryKey },
      { ...WEBHOOK_JOB_OPTIONS, jobId },
    );
  }

  /**
   * Makes sure the pending event `eventId` has a job, and runs it now if it is parked (delayed
   * without ever having been attempted: it waited for its key's previous event). A job in its
   * retry backoff is left to wait.
   */
  async wake(eventId: string): Promise<void> {
    const state = await this.#store.state(eventId);
    if (state?.state !== 'pending') return;
    const job = await this.#queue.getJob(state.job);
    if (job === undefined) {
      await this.add(eventId, state.key, state.job);
      return;
    }
    if (state.attempts === 0 && (await job.getState()) === 'delayed') {
      // It may have left the delayed set in between (picked up by its own timer): fine either way.
      await job.promote().catch(() => undefined);
    }
  }

  /**
   * Runs now every line's first event that waits out a retry backoff (the endpoint answers again:
   * no need to wait). Only heads are woken, so per-key order holds. Returns how many were woken.
   */
  async resume(): Promise<number> {
    let woken = 0;
    for await (const key of this.#store.keys()) {
      const head = await this.#store.head(key);
      if (head !== undefined && (await this.#promoteRetry(head))) woken += 1;
    }
    return woken;
  }

  /**
   * Tries one delivery waiting out its backoff now, as a probe of an endpoint that was failing;
   * returns its event id (undefined when none waits). Its success resumes the rest.
   */
  async probe(): Promise<string | undefined> {
    for await (const key of this.#store.keys()) {
      const head = await this.#store.head(key);
      if (head !== undefined && (await this.#promoteRetry(head))) return head;
    }
    return undefined;
  }

  async #promoteRetry(eventId: string): Promise<boolean> {
    const state = await this.#store.state(eventId);
    if (state?.state !== 'pending' || state.attempts === 0) return false;
    const job = await this.#queue.getJob(state.job);
    if (job === undefined || (await job.getState()) !== 'delayed') return false;
    // It may have left the delayed set in between (its own timer): fine either way.
    return job.promote().then(
      () => true,
      () => false,
    );
  }

  /**
   * Wakes the first event of every non-empty line. Heals what a crash can leave behind: a head
   * whose job was never added (killed between the store and the queue), or a parked job whose
   * predecessor's worker died before waking it.
   */
  async sweep(): Promise<number> {
    let woken = 0;
    for await (const key of this.#store.keys()) {
      const head = await this.#store.head(key);
      if (head !== undefined) {
        await this.wake(head);
        woken += 1;
      }
    }
    return woken;
  }
}
