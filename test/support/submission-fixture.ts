import pino from 'pino';
import { Registry } from 'prom-client';
import { expect } from 'vitest';
import type { AssembledPatient } from '../../src/interface/assembled-patient.ts';
import { ResultEventSchema, type ResultEvent } from '../../src/interface/result-event.ts';
import { PipelineMetrics } from '../../src/observability/pipeline-metrics.ts';
import { LatencyProfiles } from '../../src/queries/latency-profiles.ts';
import { holdKey, PollSet, type PolledRemoteJob } from '../../src/queries/poll-set.ts';
import type { LifecycleRules, SubmitFailure } from '../../src/queries/query-lifecycle.ts';
import { queryStateKey, type DueQuery } from '../../src/queries/query-outbox.ts';
import {
  QuerySubmission,
  type Prepared,
  type SubmitOutcome,
  type SubmitPorts,
} from '../../src/queries/query-submission.ts';
import { SubmissionStore } from '../../src/queries/submission-store.ts';
import type { WaitDecision } from '../../src/records/demographics-wait.ts';
import { ingestStack } from './ingest-stack.ts';
import { isolatedRedis } from './redis.ts';
import { samplePatient } from './sample-patient.ts';

export const RULES: LifecycleRules = {
  deadlineMs: 60_000,
  resubmitLost: 1,
  deliverSuperseded: false,
  maxStalledCount: 1,
  authPauseMs: 30_000,
  submitAttempts: 3,
};
export const SCHEDULE = {
  firstDelayMs: 100,
  factor: 2,
  maxDelayMs: 1_000,
  jitter: 0,
  deadlineMs: 60_000,
};
export const DEBOUNCE_MS = 2_000;
export const CATEGORY = 'END002';
/** How long `park` makes a query wait for its birth date unless told otherwise. */
export const PARK_MS = 10_000;

/** A failure of `prepare` or `submit` as the port's table gives it: `classify` reads it back. */
export class PortFailure extends Error {
  readonly failure: SubmitFailure | undefined;
  readonly reached: 'timeout' | 'connection_lost' | undefined;

  constructor(failure: SubmitFailure | undefined, reached?: 'timeout' | 'connection_lost') {
    super(failure === undefined ? 'unexpected' : failure.kind);
    this.name = 'PortFailure';
    this.failure = failure;
    this.reached = reached;
  }
}

/** What the service answers a POST: a remote job id, or a failure. */
export type PostAnswer = string | PortFailure;

/**
 * A query's submission against real Redis, as the old SubmitScheduler test set it up: queries
 * are opened the way ingest opens them (the committer's one script, with the record and the
 * crosswalk entry), the service and the record preparation are tables of answers per patient
 * (the ports' contract), the remote job is stored by the real QueryState, the per-query state
 * by the real SubmissionStore, and the clock is the test's.
 */
export class SubmissionFixture {
  readonly env: Awaited<ReturnType<typeof isolatedRedis>>;
  readonly stack: ReturnType<typeof ingestStack>;
  readonly store: SubmissionStore;
  readonly metrics = new PipelineMetrics(new Registry());
  clock: number;
  /** POST answers per patient service id, in order (a remote job id by default). */
  readonly posts = new Map<string, PostAnswer[]>();
  /** What `prepare` makes of a patient's record (a payload by default), or what it throws. */
  readonly prepared = new Map<string, Prepared | PortFailure>();
  /** Run when a patient's record is prepared (what another worker does meanwhile). */
  readonly whilePreparing = new Map<string, () => Promise<void>>();
  /** What `park` answers per patient (wait PARK_MS by default). */
  readonly parked = new Map<string, WaitDecision>();
  readonly #payloadOf = new Map<AssembledPatient, string>();
  /** Patient service ids in the order their POSTs (or Prevent calls) were sent. */
  readonly sent: string[] = [];
  /** Each `deliver` call's events. */
  readonly delivered: ResultEvent[][] = [];
  readonly outcomes: SubmitOutcome[] = [];
  /** Calls of `pauseForAuth`. */
  pauses = 0;
  readonly ports: SubmitPorts;

  private constructor(env: Awaited<ReturnType<typeof isolatedRedis>>, clock: number) {
    this.env = env;
    this.clock = clock;
    this.stack = ingestStack({ redis: env.redis, prefix: env.prefix, debounceMs: DEBOUNCE_MS });
    this.store = new SubmissionStore(env.redis, env.prefix);
    const stack = this.stack;
    this.ports = {
      prepare: async (query) => {
        const psid = query.patientServiceId;
        await this.whilePreparing.get(psid)?.();
        const answer = this.prepared.get(psid);
        if (answer instanceof PortFailure) throw answer;
        if (answer !== undefined) return answer;
        const payload = { ...samplePatient };
        this.#payloadOf.set(payload, psid);
        return { kind: 'payload', payload, recordVersion: Number(query.record.version) };
      },
      submit: async (payload, category) => {
        expect(category).toBe(CATEGORY);
        const psid = this.#payloadOf.get(payload) ?? 'unknown';
        this.sent.push(psid);
        const answer = this.posts.get(psid)?.shift() ?? `job-${psid}-${this.sent.length}`;
        if (answer instanceof PortFailure) throw answer;
        return answer;
      },
      classify: (err) => (err instanceof PortFailure ? err.failure : undefined),
      mayHaveReached: (err) => (err instanceof PortFailure ? err.reached : undefined),
      submitted: (query, remote, firstPollAt) =>
        stack.state.markSubmitted(
          query.patientServiceId,
          query.ccsrCategory,
          query.seq,
          remote,
          firstPollAt,
        ),
      park: async (query, now) =>
        this.parked.get(query.patientServiceId) ?? { kind: 'wait', until: now + PARK_MS },
      deliver: async (events) => {
        this.delivered.push(events);
      },
      pauseForAuth: async () => {
        this.pauses += 1;
      },
      localIdOf: (query) =>
        stack.crosswalk.openLocalId(query.patientServiceId, query.sealedLocalId),
    };
  }

  /** A fixture on a Redis prefix of its own, its clock at `clock`. */
  static async create(clock = 1_800_000_000_000): Promise<SubmissionFixture> {
    return new SubmissionFixture(await isolatedRedis(), clock);
  }

  /** A QuerySubmission on the fixture's ports, store and clock. */
  submission(rules: Partial<LifecycleRules> = {}): QuerySubmission {
    const { env } = this;
    return new QuerySubmission({
      store: this.store,
      ports: this.ports,
      profiles: new LatencyProfiles({
        source: new PollSet({
          redis: env.redis,
          prefix: env.prefix,
          holdKey: holdKey(env.prefix),
          pauseKey: `${env.prefix}:paused`,
        }),
        now: () => this.clock,
      }),
      rules: { ...RULES, ...rules },
      schedule: SCHEDULE,
      demographicsWaitS: 60,
      logger: pino({ level: 'silent' }),
      metrics: this.metrics,
      onOutcome: (o) => this.outcomes.push(o),
      now: () => this.clock,
    });
  }

  /**
   * Stores a record for a new patient `mrn` and opens its query, as ingest does (one script): due
   * DEBOUNCE_MS after now. Returns the patient's service id.
   */
  async open(mrn: string, eventId = `ev-${mrn}`, category = CATEGORY): Promise<string> {
    const { stack } = this;
    const plan = stack.crosswalk.plan(mrn);
    const psid = plan.patientServiceId;
    const result = await stack.committer.commit({
      patientServiceId: psid,
      newPatient: plan,
      record: {
        kind: 'put',
        sealed: stack.records.sealRecord(psid, samplePatient),
        contentHmac: stack.records.contentHmac(psid, samplePatient),
      },
      eventId,
      now: new Date(this.clock),
      extraCategories: [category],
    });
    expect(result).toMatchObject({ status: 'ok', queries: [{ coalesced: false }] });
    return psid;
  }

  /** A later update of a known patient with another record: opens the next query of the key. */
  async update(psid: string, eventId: string, age: number): Promise<void> {
    const { stack } = this;
    const record = { ...samplePatient, demographics: { age, gender: 'female' as const } };
    expect(
      await stack.committer.commit({
        patientServiceId: psid,
        record: {
          kind: 'put',
          sealed: stack.records.sealRecord(psid, record),
          contentHmac: stack.records.contentHmac(psid, record),
        },
        eventId,
        now: new Date(this.clock),
        extraCategories: [CATEGORY],
      }),
    ).toMatchObject({ status: 'ok', queries: [{ coalesced: false }] });
  }

  /** Query `seq` of the patient's key (`category`), as a job names it. */
  query(psid: string, seq = 1, category = CATEGORY): DueQuery {
    return { patientServiceId: psid, ccsrCategory: category, seq };
  }

  /** The coalescing hash of the patient's key. */
  qs(psid: string, category = CATEGORY): string {
    return queryStateKey(this.env.prefix, psid, category);
  }

  /** The remote job stored for query `seq`, if any. */
  async remoteOf(psid: string, seq = 1): Promise<PolledRemoteJob | undefined> {
    const json = await this.env.redis.hget(this.qs(psid), `r:${seq}`);
    return json === null ? undefined : (JSON.parse(json) as PolledRemoteJob);
  }

  /** Every event delivered so far, checked against the interface's schema. */
  events(): ResultEvent[] {
    return this.delivered.flat().map((e) => ResultEventSchema.parse(e));
  }

  cleanup(): Promise<void> {
    return this.env.cleanup();
  }
}

/** A counter's or histogram's values, as prom-client reports them. */
export async function counted(metric: { get(): Promise<{ values: unknown[] }> }) {
  return (await metric.get()).values;
}
