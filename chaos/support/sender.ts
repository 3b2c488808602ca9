import { setTimeout as sleep } from 'node:timers/promises';
import { mllpExchange, mllpFrame } from './mllp-client.ts';
import type { Update } from './updates.ts';

/** What became of one update the sender was asked to deliver. */
export interface SentUpdate {
  update: Update;
  attempts: number;
  /** Epoch ms of the first attempt. */
  firstAttemptAt: number;
  /** Epoch ms of the answer that acknowledged it (undefined: never acknowledged). */
  ackedAt?: number;
  /** Set when the ingester refused it for good (4xx, AE): the sender stops resending. */
  rejected?: string;
  /** How often each answer came back (`202`, `503`, `AA`, `timeout`, `closed`, …). */
  answers: Record<string, number>;
}

export interface SenderOptions {
  ingestUrl: string;
  mllpPort: number;
  token: string;
  /** How long one attempt may take before the sender gives up on it and retries. */
  attemptTimeoutMs: number;
  /** Retry delays: `firstRetryMs`, doubling, at most `maxRetryMs`. */
  firstRetryMs: number;
  maxRetryMs: number;
  /** Epoch ms after which nothing is resent (the update stays unacknowledged). */
  giveUpAt: () => number;
}

interface Attempt {
  answer: string;
  result: 'ack' | 'retry' | 'reject';
}

const CONTENT_TYPE = { json: 'application/json', fhir: 'application/fhir+json' } as const;
const PATH = { json: '/v1/record-updates', fhir: '/v1/fhir/Bundle' } as const;

/**
 * Delivers updates the way an integration engine (Mirth) does: one queue per patient, in order;
 * an update that is not acknowledged (503, timeout, reset, MLLP connection closed without an ACK,
 * AR) is resent with backoff until acknowledged or until `giveUpAt`; a definite refusal (4xx, AE)
 * is not resent.
 */
export class Sender {
  readonly sent: SentUpdate[] = [];
  readonly #o: SenderOptions;

  constructor(options: SenderOptions) {
    this.#o = options;
  }

  /** Sends `updates` (one patient's, in order) one after the other. */
  async sendInOrder(updates: readonly Update[]): Promise<void> {
    for (const update of updates) await this.send(update);
  }

  async send(update: Update): Promise<SentUpdate> {
    const record: SentUpdate = { update, attempts: 0, firstAttemptAt: Date.now(), answers: {} };
    this.sent.push(record);
    let delay = this.#o.firstRetryMs;
    for (let attempt = 0; attempt < 10_000; attempt++) {
      record.attempts++;
      const { answer, result } = await this.#attempt(update);
      record.answers[answer] = (record.answers[answer] ?? 0) + 1;
      if (result === 'ack') {
        record.ackedAt = Date.now();
        return record;
      }
      if (result === 'reject') {
        record.rejected = answer;
        return record;
      }
      if (Date.now() + delay > this.#o.giveUpAt()) return record;
      await sleep(delay);
      delay = Math.min(delay * 2, this.#o.maxRetryMs);
    }
    return record;
  }

  async #attempt(update: Update): Promise<Attempt> {
    if (update.feed === 'hl7') {
      const outcome = await mllpExchange(
        this.#o.mllpPort,
        mllpFrame(update.body),
        this.#o.attemptTimeoutMs,
      );
      if (outcome.kind !== 'ack') return { answer: outcome.kind, result: 'retry' };
      if (outcome.code === 'AA') return { answer: 'AA', result: 'ack' };
      if (outcome.code === 'AR') return { answer: 'AR', result: 'retry' };
      return { answer: outcome.code, result: 'reject' };
    }
    try {
      const response = await fetch(`${this.#o.ingestUrl}${PATH[update.feed]}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.#o.token}`,
          'content-type': CONTENT_TYPE[update.feed],
        },
        body: update.body,
        signal: AbortSignal.timeout(this.#o.attemptTimeoutMs),
      });
      await response.body?.cancel();
      const answer = String(response.status);
      if (response.status >= 200 && response.status < 300) return { answer, result: 'ack' };
      if (response.status === 429 || response.status >= 500) return { answer, result: 'retry' };
      return { answer, result: 'reject' };
    } catch (err) {
      const name = (err as Error).name;
      return { answer: name === 'TimeoutError' ? 'timeout' : 'network', result: 'retry' };
    }
  }
}
