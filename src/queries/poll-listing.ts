import type { RedisClient } from '../queues/redis-client.ts';
import { pollSetKey, type PolledRemoteJob } from './poll-set.ts';
import { parseOutboxMember, queryStateKey } from './query-outbox.ts';

/**
 * A query being polled, as {@link PollListing} reads it: its category, its remote job and when it
 * is polled next. Never its patient_service_id (nor, of course, a patient identifier): what is
 * read for it is dropped here, so that nothing built on the listing can show it.
 */
export interface ListedPoll {
  ccsrCategory: string;
  /**
   * When it is polled next (epoch ms): its score in the poll set. A poll being made right now
   * shows its lease's end (the poller moved it there; it is written back when the answer comes).
   */
  nextPollAt: number;
  /** The service's id of the query's job. */
  remoteJobId: string;
  /** The id of the query's result event; null for a query submitted before ids were stored. */
  queryId: string | null;
  /** When it was submitted (epoch ms). */
  submittedAt: number;
  /** Polls that found the job still running. */
  polls: number;
  /** When the last of them was made (epoch ms); null before the first. */
  lastPollAt: number | null;
  /** Resubmissions before this submission (remote jobs the service lost). */
  resubmits: number;
}

/** Whether a poll is due now (its time has come, no poller has taken it yet) or later. */
export type PollListState = 'due' | 'later';

export interface PollListingOptions {
  /** Any connection: the listing only reads. */
  redis: RedisClient;
  /** The partition's prefix. */
  prefix: string;
  /**
   * The most entries one {@link PollListing.page} reads, whatever range it is asked for.
   * @defaultValue 1000
   */
  maxPage?: number;
  /** How many members {@link PollListing.find} reads per step. @defaultValue 500 */
  scanCount?: number;
}

/**
 * Reads one partition's due set of polls (`<prefix>:qpoll`, see poll-set.ts) for the operator's
 * queue view, a page at a time and without changing anything: the members of a page by rank
 * (`ZRANGE`), then each one's remote job (`HGET r:<seq>` of its coalescing hash). A member whose
 * remote job is gone (the query ended between the two reads, or was purged) is left out, as the
 * pollers drop it. Nothing that names the patient leaves this class.
 */
export class PollListing {
  readonly key: string;
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #maxPage: number;
  readonly #scanCount: number;

  constructor({ redis, prefix, maxPage = 1_000, scanCount = 500 }: PollListingOptions) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#maxPage = maxPage;
    this.#scanCount = scanCount;
    this.key = pollSetKey(prefix);
  }

  /** How many polls are due at `now`, and how many later. */
  async counts(now: number): Promise<Record<PollListState, number>> {
    const [due, later] = await Promise.all([
      this.#redis.zcount(this.key, '-inf', now),
      this.#redis.zcount(this.key, `(${now}`, '+inf'),
    ]);
    return { due, later };
  }

  /**
   * The polls of `state` at `now` from `start` to `end` (0-based, inclusive; -1: to the end),
   * soonest first (the most overdue first among the due ones). Reads at most `maxPage` members.
   */
  async page(state: PollListState, start: number, end: number, now: number): Promise<ListedPoll[]> {
    const from = Math.max(0, Math.trunc(start));
    const last = end < 0 ? Infinity : Math.trunc(end);
    const to = Math.min(last, from + this.#maxPage - 1);
    if (to < from) return [];
    // Scores are poll times: the due polls are the first ranks, the later ones follow them.
    const offset = state === 'due' ? 0 : await this.#redis.zcount(this.key, '-inf', now);
    const flat = await this.#redis.zrange(
      this.key,
      String(offset + from),
      String(offset + to),
      'WITHSCORES',
    );
    const members: [string, number][] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const score = Number(flat[i + 1]);
      // The set may have changed between the two reads: each entry is shown where it is now.
      if (score <= now === (state === 'due')) members.push([String(flat[i]), score]);
    }
    const listed = await Promise.all(members.map(([member, score]) => this.#read(member, score)));
    return listed.filter((poll) => poll !== undefined);
  }

  /**
   * The poll of the remote job `remoteJobId`, if it is in the set. The set is not indexed by
   * remote job: this walks it, `scanCount` members at a time, until it finds it (the view does so
   * only when one poll's own page is opened).
   */
  async find(remoteJobId: string): Promise<ListedPoll | undefined> {
    let cursor = '0';
    do {
      const [next, flat] = await this.#redis.zscan(this.key, cursor, 'COUNT', this.#scanCount);
      cursor = next;
      const batch: Promise<ListedPoll | undefined>[] = [];
      for (let i = 0; i < flat.length; i += 2) {
        batch.push(this.#read(String(flat[i]), Number(flat[i + 1])));
      }
      const found = (await Promise.all(batch)).find((poll) => poll?.remoteJobId === remoteJobId);
      if (found !== undefined) return found;
    } while (cursor !== '0');
    return undefined;
  }

  /** The poll of `member` (scored `score`), without its patient_service_id. */
  async #read(member: string, score: number): Promise<ListedPoll | undefined> {
    const query = parseOutboxMember(member);
    if (query === undefined) return undefined;
    const { patientServiceId, ccsrCategory, seq } = query;
    const text = await this.#redis.hget(
      queryStateKey(this.#prefix, patientServiceId, ccsrCategory),
      `r:${seq}`,
    );
    if (text === null) return undefined;
    let remote: PolledRemoteJob;
    try {
      remote = JSON.parse(text) as PolledRemoteJob;
    } catch {
      return undefined;
    }
    return {
      ccsrCategory,
      nextPollAt: score,
      remoteJobId: remote.remoteJobId,
      queryId: remote.queryId ?? null,
      submittedAt: remote.submittedAt,
      polls: remote.polls ?? 0,
      lastPollAt: remote.lastPollAt ?? null,
      resubmits: remote.resubmits,
    };
  }
}
