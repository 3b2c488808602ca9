import { createHash } from 'node:crypto';
import { DueSetLoop, type DueSetSchedulerOptions } from './due-set-loop.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import { adaptiveDelayMs, latencyEstimateMs } from './adaptive-schedule.ts';
import type { LeasedPoll, PollSet, PollWrite, PolledRemoteJob } from './poll-set.ts';
import {
  decideBeforePoll,
  decidePoll,
  type EndDecision,
  type ForgetDecision,
  type PollAnswer,
  type PollDecision,
  type PollFacts,
} from './query-lifecycle.ts';
import { logQueryEnd, resultEvent, type QueryRecord } from './query-outcome.ts';
import { endCall, type QuerySpans } from './query-spans.ts';

/** The ports the poll scheduler works through. */
export interface PollPorts {
  /** GETs the remote job and classifies the answer (see `pollAnswerOf`). */
  poll(remoteJobId: string, signal: AbortSignal): Promise<PollAnswer>;
  /** The hospital's id of a patient (for the result event), if still known. */
  localIdOf(patientServiceId: string): Promise<string | undefined>;
  /** Hands finished results to the delivery side, all at once. */
  deliver(events: ResultEvent[]): Promise<void>;
  /** Pauses the partition's queries: the service refused the API key. */
  pauseForAuth(): Promise<void>;
}

/** How a polled query ended, for the caller's tests and metrics. */
export interface PolledOutcome {
  data: QueryRecord;
  decision: EndDecision | ForgetDecision;
  eventId: string | null;
}

export interface PollSchedulerOptions extends DueSetSchedulerOptions<PolledOutcome> {
  polls: PollSet;
  ports: PollPorts;
  /** `queries.polling`. */
  polling: { interval_ms: number; batch: number; concurrency: number; lease_ms: number };
  /** The service's `host[:port]`, named when its trouble ends a query (see logQueryEnd). */
  serviceHost?: string;
  /**
   * The `cgs.poll` span of each poll (tracing on), in the trace of the query's submission; none
   * when tracing is off.
   */
  spans?: QuerySpans | undefined;
}

/** The id of a query's result event when its data predates stored query ids: stable per query. */
function derivedQueryId(poll: LeasedPoll): string {
  const h = createHash('sha256').update(`${poll.member}|${poll.remote.remoteJobId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The query's data as the result event and a resubmission need it. */
function dataOf(poll: LeasedPoll): QueryRecord {
  const { remote } = poll;
  return {
    queryId: remote.queryId ?? derivedQueryId(poll),
    patientServiceId: poll.patientServiceId,
    ccsrCategory: poll.ccsrCategory,
    seq: poll.seq,
    ...(poll.triggers === undefined ? {} : { triggers: poll.triggers }),
    recordVersion: remote.recordVersion,
    remoteJobId: remote.remoteJobId,
    submittedAt: remote.submittedAt,
    polls: remote.polls ?? 0,
    resubmits: remote.resubmits,
  };
}

interface Polled {
  poll: LeasedPoll;
  decision: PollDecision;
  answer: PollAnswer | undefined;
  at: number;
}

/**
 * Polls the submitted queries of one partition (the shape of Sidekiq's scheduled-set poller):
 * every tick one script leases up to a batch of due polls, the GETs go out concurrently, and one
 * script writes the outcomes and next due times back. Results are handed to the delivery side
 * before the write, in one call: a worker that dies in between leaves the polls leased, they come
 * due again after `lease_ms` and the same events (same ids) are handed over again. No poll is
 * sent by two workers at once while its lease holds (keep `lease_ms` above a GET's timeout with
 * its retries).
 */
export class PollScheduler extends DueSetLoop<LeasedPoll> {
  readonly #o: PollSchedulerOptions;
  readonly #now: () => number;

  constructor(options: PollSchedulerOptions) {
    super(options, options.polling, {
      failing: 'polls could not be leased or written; their leases run out and they come due again',
      recovered: 'polls are being leased again',
    });
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Leases up to `limit` due polls for `lease_ms`. */
  protected take(limit: number, now: number): Promise<LeasedPoll[]> {
    return this.#o.polls.lease(now, limit, now + this.#o.polling.lease_ms);
  }

  /** How full the partition's due set of polls is (for the poll gauges). */
  depth(now: number): ReturnType<PollSet['depth']> {
    return this.#o.polls.depth(now);
  }

  protected async run(leased: LeasedPoll[], leasedAt: number): Promise<void> {
    const { metrics, rules, profiles } = this.#o;
    // A profile that cannot be read now keeps its last copy (or the configured schedule).
    await profiles.refresh(leased.map((p) => p.ccsrCategory)).catch(() => undefined);
    const polled = await Promise.all(
      leased.map(async (poll): Promise<Polled> => {
        metrics?.pollLateness.observe(Math.max(0, leasedAt - poll.dueAt) / 1_000);
        const facts: PollFacts = {
          submittedAt: poll.remote.submittedAt,
          polls: poll.remote.polls ?? 0,
          resubmits: poll.remote.resubmits,
          superseded: poll.submitted > poll.seq,
          leases: poll.leases,
        };
        const before = decideBeforePoll(facts, rules);
        if (before !== undefined)
          return { poll, decision: before, answer: undefined, at: leasedAt };
        const answer = await this.#poll(poll);
        metrics?.polls.inc({ state: answer.kind === 'pending' ? 'pending' : stateLabel(answer) });
        const at = this.#now();
        const profile = profiles.get(poll.ccsrCategory);
        const decision = decidePoll(facts, answer, rules, at, (polls) =>
          adaptiveDelayMs(polls, at - poll.remote.submittedAt, profile, this.#o.schedule),
        );
        return { poll, decision, answer, at };
      }),
    );
    await this.#carryOut(polled);
  }

  /** GETs the remote job of `poll`, under its `cgs.poll` span when tracing is on. */
  #poll(poll: LeasedPoll): Promise<PollAnswer> {
    const { spans, ports } = this.#o;
    const { remote } = poll;
    if (spans === undefined) return ports.poll(remote.remoteJobId, this.signal);
    return spans.poll(poll, remote.tp, (remote.polls ?? 0) + 1, async (span) => {
      const answer = await ports.poll(remote.remoteJobId, this.signal);
      endCall(span, { outcome: answer.kind, remoteJobId: remote.remoteJobId });
      return answer;
    });
  }

  async #carryOut(polled: Polled[]): Promise<void> {
    const { ports, logger } = this.#o;
    const writes: PollWrite[] = [];
    const ended: { p: Polled; data: QueryRecord; decision: EndDecision | ForgetDecision }[] = [];
    const resubmit: QueryRecord[] = [];
    let holdMs = 0;
    let authRefused = false;
    for (const p of polled) {
      const { poll, decision } = p;
      switch (decision.kind) {
        case 'poll_again': {
          const remote: PolledRemoteJob = {
            ...poll.remote,
            polls: decision.polls,
            lastPollAt: p.at,
          };
          writes.push({ kind: 'again', poll, at: decision.at, remote, ...polledAt(p) });
          break;
        }
        case 'hold':
          holdMs = Math.max(holdMs, decision.ms);
          if (decision.reason === 'auth_refused') authRefused = true;
          writes.push({ kind: 'hold', poll, at: decision.until });
          break;
        case 'resubmit': {
          const data = dataOf(poll);
          resubmit.push({ ...data, resubmits: data.resubmits + 1 });
          // Back to the due set of new queries, due now: the submission side sends it again.
          writes.push({
            kind: 'resubmit',
            poll,
            at: p.at,
            resubmits: data.resubmits + 1,
            ...polledAt(p),
          });
          break;
        }
        case 'end':
        case 'forget': {
          const remoteEnded = p.answer?.kind === 'success' || p.answer?.kind === 'failure';
          const previous = poll.remote.lastPollAt ?? poll.remote.submittedAt;
          const latencyMs = remoteEnded
            ? latencyEstimateMs(poll.remote.submittedAt, previous, p.at)
            : undefined;
          const data = dataOf(poll);
          writes.push({
            kind: 'end',
            poll,
            ...(latencyMs === undefined ? {} : { latencyMs }),
            ...polledAt(p),
            // Ended when decided, before its event is handed over.
            endedAt: p.at,
            end:
              decision.kind === 'end'
                ? {
                    outcome: decision.outcome,
                    errorCode: decision.failure?.code,
                    eventId: data.queryId,
                  }
                : { outcome: decision.countAs },
          });
          ended.push({ p, data, decision });
          break;
        }
      }
    }
    if (holdMs > 0) {
      const ms = holdMs;
      if (authRefused) {
        await ports.pauseForAuth();
      } else {
        await this.#o.polls.hold(ms, 'rate_limited');
        logger.warn({ retry_after_ms: ms }, 'service rate limit: holding the polls');
      }
    }
    const events = await this.#events(ended);
    if (events.length > 0) await ports.deliver(events.map((e) => e.event));
    await this.#o.polls.apply(writes);
    for (const data of resubmit) {
      logger.warn(
        { query_key: `${data.patientServiceId}/${data.ccsrCategory}`, resubmits: data.resubmits },
        'remote job lost; submitting again',
      );
    }
    if (resubmit.length > 0) this.#o.metrics?.resubmissions.inc(resubmit.length);
    for (const { p, data, decision } of ended) {
      const eventId = events.find((e) => e.data === data)?.event.id ?? null;
      this.#o.metrics?.queriesFinished.inc({ outcome: decision.countAs });
      logQueryEnd(logger, data, decision, p.at - (data.submittedAt ?? p.at), this.#o.serviceHost);
      this.#o.onOutcome?.({ data, decision, eventId });
    }
  }

  async #events(
    ended: { p: Polled; data: QueryRecord; decision: EndDecision | ForgetDecision }[],
  ): Promise<{ data: QueryRecord; event: ResultEvent }[]> {
    const withEvents = ended.filter((e) => e.decision.kind === 'end');
    return Promise.all(
      withEvents.map(async ({ data, decision, p }) => {
        const d = decision as EndDecision;
        const event = resultEvent(data, {
          outcome: d.outcome,
          patientId: (await this.#o.ports.localIdOf(data.patientServiceId)) ?? null,
          ...(d.concordance === undefined ? {} : { concordance: d.concordance }),
          ...(d.failure === undefined ? {} : { failure: d.failure }),
          now: new Date(p.at),
        });
        return { data, event };
      }),
    );
  }
}

/** When the poll behind a write was made: none when the query ended before its poll. */
function polledAt(p: Polled): { polledAt?: number } {
  return p.answer === undefined ? {} : { polledAt: p.at };
}

function stateLabel(answer: PollAnswer): string {
  switch (answer.kind) {
    case 'success':
      return 'success';
    case 'failure':
      return 'failure';
    case 'lost':
      return 'lost';
    default:
      return 'error';
  }
}
