import {
  forEachLimit,
  simulatorJob,
  startBenchSimulator,
  type BenchContext,
} from '../support/fixtures.ts';
import { startWorkerLine } from '../support/worker-line.ts';
import { round, summarize, type Summary } from '../support/stats.ts';

export interface PollSchedule {
  first_delay_ms: number;
  factor: number;
  max_delay_ms: number;
  jitter: number;
  deadline_ms: number;
}

export interface PollingCostSettings {
  queries: number;
  jobLatencyMs: { min: number; max: number };
  schedules: { name: string; poll: PollSchedule }[];
}

export const DEFAULT_POLLING_COST: PollingCostSettings = {
  queries: 300,
  jobLatencyMs: { min: 5_000, max: 60_000 },
  schedules: [
    {
      name: 'default',
      poll: {
        first_delay_ms: 1_000,
        factor: 2,
        max_delay_ms: 30_000,
        jitter: 0.2,
        deadline_ms: 1_800_000,
      },
    },
    {
      name: 'cap 5 s',
      poll: {
        first_delay_ms: 1_000,
        factor: 2,
        max_delay_ms: 5_000,
        jitter: 0.2,
        deadline_ms: 1_800_000,
      },
    },
  ],
};

export interface PollingCostLine {
  schedule: string;
  poll: PollSchedule;
  completed: number;
  polls_per_query: Summary;
  detection_lag_ms: Summary;
  seconds: number;
}

export interface PollingCostResult {
  settings: PollingCostSettings & { setup: string; method: string };
  lines: PollingCostLine[];
}

/**
 * Polls per completed query and the lag from a remote job's end to the worker seeing it, for
 * remote jobs of uniformly 5-60 s, under one or more poll schedules run side by side.
 */
export async function pollingCostScenario(
  ctx: BenchContext,
  settings: PollingCostSettings,
): Promise<PollingCostResult> {
  const simulator = await startBenchSimulator(ctx, {
    minMs: settings.jobLatencyMs.min,
    maxMs: settings.jobLatencyMs.max,
  });
  try {
    ctx.say(
      `polling cost: ${settings.queries} queries per schedule (${settings.schedules.map((s) => s.name).join(', ')}), ` +
        `remote jobs ${settings.jobLatencyMs.min / 1000}-${settings.jobLatencyMs.max / 1000} s`,
    );
    const lines = await Promise.all(
      settings.schedules.map((schedule, i) =>
        runLine(ctx, settings, schedule, `poll${i}`, simulator.url),
      ),
    );
    return {
      settings: {
        ...settings,
        setup:
          `simulator in the bench process, remote job durations uniform ${settings.jobLatencyMs.min}-${settings.jobLatencyMs.max} ms; ` +
          `one \`concordance-worker work\` child per schedule (side by side, own key prefix, debounce 10 ms), ` +
          `${settings.queries} patients with one END002 query each, all scheduled at once`,
        method:
          "polls per query: the query job's data.polls (pending answers) + 1 (the answer that found success). " +
          "detection lag: the result event's created_at (taken right after the successful poll) minus the remote job's " +
          'finishes_at (simulator GET /_admin/jobs/:job_id)',
      },
      lines,
    };
  } finally {
    await simulator.close();
  }
}

async function runLine(
  ctx: BenchContext,
  settings: PollingCostSettings,
  schedule: PollingCostSettings['schedules'][number],
  name: string,
  simulatorUrl: string,
): Promise<PollingCostLine> {
  const line = await startWorkerLine(ctx, {
    name,
    queries: { debounce_ms: 10, poll: schedule.poll },
    simulatorUrl,
    patients: settings.queries,
  });
  try {
    const t0 = Date.now();
    const t1 = await line.run(line.patients, settings.queries, {
      timeoutMs: 240_000,
      what: `every result of schedule "${schedule.name}"`,
    });
    const events = await line.outbound.getJobs(['wait'], 0, -1);
    const polls: number[] = [];
    const lags: number[] = [];
    await forEachLimit(events, 16, async (job) => {
      const event = job.data;
      if (event.status !== 'completed' || event.remote_job_id === null) return;
      const timeline = await simulatorJob(simulatorUrl, event.remote_job_id);
      lags.push(Date.parse(event.created_at) - Date.parse(timeline.finishes_at));
      // The service's count of status reads: the polls of the job.
      polls.push(timeline.status_reads);
    });
    return {
      schedule: schedule.name,
      poll: schedule.poll,
      completed: lags.length,
      polls_per_query: summarize(polls, 2),
      detection_lag_ms: summarize(lags, 0),
      seconds: round((t1 - t0) / 1_000, 1) ?? 0,
    };
  } finally {
    await line.close();
  }
}
