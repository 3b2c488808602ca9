import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cleanup } from '../../bench/support/processes.ts';
import { startChaosStack, type ChaosStack } from './chaos-stack.ts';
import { computeFigures, type FaultWindow, type Figures } from './figures.ts';
import { Sender, type SentUpdate } from './sender.ts';
import { BUILDERS, type Feed } from './updates.ts';

/** What the runner gives every scenario. */
export interface ScenarioContext {
  cleanup: Cleanup;
  tmpDir: string;
  quick: boolean;
  logLevel: string;
  /** Where a failing scenario leaves the last log lines of its processes. */
  logDir: string;
  /** Short random id: event ids and control ids carry it, so runs never collide. */
  runId: string;
  say(message: string): void;
}

/** A check a scenario makes on top of the figures (e.g. "the process survived the fuzz"). */
export interface Check {
  name: string;
  ok: boolean;
  detail?: unknown;
}

export interface ScenarioOutcome {
  figures: Figures;
  checks: Check[];
  /** Scenario-specific settings and observations. */
  details: Record<string, unknown>;
}

/** Traffic in bursts: every `intervalMs`, each patient's next update (a patient's stay in order). */
export interface BurstPlan {
  feeds: readonly Feed[];
  patientsPerFeed: number;
  bursts: number;
  intervalMs: number;
}

export interface Traffic {
  sender: Sender;
  /** Resolves when every patient's queue is empty (acknowledged, refused or given up). */
  done: Promise<void>;
  plan: BurstPlan;
}

/** Sender timings: a 5 s attempt timeout, resends after 250 ms doubling to 4 s. */
export const SENDER_TIMINGS = { attemptTimeoutMs: 5_000, firstRetryMs: 250, maxRetryMs: 4_000 };

/** Starts sending `plan` to `stack`; the sender gives up on an update at `giveUpAt()`. */
export function startTraffic(
  ctx: ScenarioContext,
  stack: ChaosStack,
  plan: BurstPlan,
  giveUpAt: () => number,
  tag: string,
): Traffic {
  const sender = new Sender({
    ingestUrl: stack.ingestUrl,
    mllpPort: stack.mllpPort,
    token: stack.token,
    ...SENDER_TIMINGS,
    giveUpAt,
  });
  const t0 = Date.now();
  const chains: Promise<void>[] = [];
  for (const feed of plan.feeds) {
    for (let p = 0; p < plan.patientsPerFeed; p++) {
      const patientId = `${feed.toUpperCase()}-${ctx.runId}-${tag}-${p}`;
      chains.push(
        (async () => {
          for (let seq = 0; seq < plan.bursts; seq++) {
            const wait = t0 + seq * plan.intervalMs - Date.now();
            if (wait > 0) await sleep(wait);
            await sender.send(BUILDERS[feed](ctx.runId, patientId, p, seq));
          }
        })(),
      );
    }
  }
  return { sender, done: Promise.all(chains).then(() => undefined), plan };
}

/** Jobs still to run (waiting, active, delayed, prioritized) in the query and webhook queues. */
export async function pendingJobs(stack: ChaosStack): Promise<number> {
  const counts = await stack.queueCounts();
  let pending = 0;
  for (const c of Object.values(counts))
    pending += (c.waiting ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0);
  return pending;
}

/**
 * Waits until every acknowledged update is reflected in a delivered result (the figures' `lost`
 * is 0); or until the queues hold nothing left to run and no new event arrived for `quietMs`; or
 * until `maxMs` passed. Returns how it ended.
 */
export async function drain(
  stack: ChaosStack,
  sent: readonly SentUpdate[],
  { quietMs, maxMs }: { quietMs: number; maxMs: number },
): Promise<'all reflected' | 'quiet and queues empty' | 'time limit'> {
  const deadline = Date.now() + maxMs;
  let seen = -1;
  let lastChange = Date.now();
  while (Date.now() < deadline) {
    const events = stack.receiver.events;
    if (events.length !== seen) {
      seen = events.length;
      lastChange = Date.now();
      if (allReflected(sent, events)) return 'all reflected';
    }
    if (Date.now() - lastChange > quietMs && (await pendingJobs(stack)) === 0)
      return 'quiet and queues empty';
    await sleep(250);
  }
  return 'time limit';
}

function allReflected(
  sent: readonly SentUpdate[],
  events: ChaosStack['receiver']['events'],
): boolean {
  const now = Date.now();
  const figures = computeFigures({
    sent,
    events,
    attempts: [],
    serviceRequests: [],
    faults: [],
    startedAt: now,
    endedAt: now,
  });
  return figures.lost === 0;
}

/** Collects the figures once traffic and faults are over and the pipeline drained. */
export async function figuresOf(
  stack: ChaosStack,
  sent: readonly SentUpdate[],
  faults: readonly FaultWindow[],
  startedAt: number,
): Promise<Figures> {
  return computeFigures({
    sent,
    events: stack.receiver.events,
    attempts: stack.receiver.attempts,
    serviceRequests: await stack.serviceRequests(),
    faults,
    startedAt,
    endedAt: Date.now(),
  });
}

/** Writes the last lines the pipeline processes printed next to the JSON; returns the path. */
export function saveLogs(ctx: ScenarioContext, name: string, stack: ChaosStack): string {
  mkdirSync(ctx.logDir, { recursive: true });
  const path = join(ctx.logDir, `${name}-${ctx.runId}.log`);
  const tail = (label: string, lines: readonly string[]) =>
    `== ${label} (last ${lines.length} lines)\n${lines.join('\n')}\n`;
  writeFileSync(
    path,
    tail('ingest', stack.ingest.proc.lines) + tail('worker', stack.worker.proc.lines),
  );
  return path;
}

/** Starts a stack named after the scenario with the suite's defaults. */
export function stackFor(
  ctx: ScenarioContext,
  name: string,
  latency = '200-800',
): Promise<ChaosStack> {
  return startChaosStack({
    cleanup: ctx.cleanup,
    tmpDir: ctx.tmpDir,
    name,
    latency,
    logLevel: ctx.logLevel,
  });
}

/** How long the pipeline processes get to exit after SIGTERM at the end of a scenario. */
export const SHUTDOWN_GRACE_MS = 30_000;

/** A scenario of bursts of traffic with faults injected by `inject` while it flows. */
export interface BurstScenarioOptions {
  name: string;
  plan: BurstPlan;
  latency?: string;
  /** Injects the faults; resolves with their windows once the last one is lifted. */
  inject: (
    stack: ChaosStack,
    say: (m: string) => void,
    /** Epoch ms when the last burst is due: faults start before it. */
    trafficEnd: number,
  ) => Promise<FaultWindow[]>;
  /** Longest time the faults keep the pipeline from acknowledging (for the sender's patience). */
  outageMs: number;
  /** How long without a new delivered event ends the wait for stragglers. */
  quietMs: number;
  /** Called with the stack after the figures, for extra checks and details. */
  inspect?: (
    stack: ChaosStack,
    figures: Figures,
  ) => Promise<{ checks?: Check[]; details?: Record<string, unknown> }>;
  /** Settings to report. */
  settings: Record<string, unknown>;
}

export async function burstScenario(
  ctx: ScenarioContext,
  o: BurstScenarioOptions,
): Promise<ScenarioOutcome> {
  const say = (m: string) => ctx.say(`${o.name}: ${m}`);
  say('starting redis, proxy, service, receiver, ingest and worker');
  const stack = await stackFor(ctx, o.name, o.latency);
  try {
    const startedAt = Date.now();
    const trafficMs = o.plan.bursts * o.plan.intervalMs;
    const giveUpAt = startedAt + trafficMs + o.outageMs + 60_000;
    say(
      `${o.plan.bursts} bursts of ${o.plan.patientsPerFeed * o.plan.feeds.length} updates, every ${o.plan.intervalMs} ms`,
    );
    const traffic = startTraffic(ctx, stack, o.plan, () => giveUpAt, 't');
    const faults = await o.inject(stack, say, startedAt + trafficMs);
    await traffic.done;
    say(`traffic done (${traffic.sender.sent.length} updates); waiting for results`);
    const drained = await drain(stack, traffic.sender.sent, {
      quietMs: o.quietMs,
      maxMs: Math.max(90_000, o.quietMs * 3),
    });
    const figures = await figuresOf(stack, traffic.sender.sent, faults, startedAt);
    const queues = await stack.queueCounts();
    const logs = figures.lost + figures.unacknowledged > 0 ? saveLogs(ctx, o.name, stack) : null;
    const extra = (await o.inspect?.(stack, figures)) ?? {};
    // Issue 8 asks for exit 0 within a grace period (25 s by default) after SIGTERM, outage or not.
    const [ingestExit, workerExit] = await Promise.all([
      stack.ingest.shutdown(SHUTDOWN_GRACE_MS),
      stack.worker.shutdown(SHUTDOWN_GRACE_MS),
    ]);
    const shutdown = { ingest: ingestExit ?? null, worker: workerExit ?? null };
    return {
      figures,
      checks: [
        ...(extra.checks ?? []),
        {
          name: `ingest and worker exit 0 within ${SHUTDOWN_GRACE_MS / 1000} s of SIGTERM`,
          ok: [ingestExit, workerExit].every((e) => e?.exit_code === 0),
          detail: shutdown,
        },
      ],
      details: {
        settings: { ...o.settings, plan: o.plan, service_latency_ms: o.latency ?? '200-800' },
        drain_ended: drained,
        // Jobs left in the queues at the end (`failed`: jobs BullMQ gave up on).
        queues_at_end: queues,
        ...(logs === null ? {} : { process_logs: logs }),
        process_starts: { ingest: stack.ingest.starts, worker: stack.worker.starts },
        ...extra.details,
      },
    };
  } finally {
    await stack.close();
  }
}
