import { OutboundEventSchema } from '../../src/delivery/outbound-event.ts';
import {
  CATEGORY,
  forEachLimit,
  simulatorJob,
  startBenchSimulator,
  type BenchContext,
} from '../support/fixtures.ts';
import { startWorkerLine } from '../support/worker-line.ts';
import { quantile, round, summarize, type Summary } from '../support/stats.ts';

/** Remote job durations, uniform between the bounds (milliseconds). */
export interface LatencyRange {
  min: number;
  max: number;
}

export interface DetectionSettings {
  /** L, the remote jobs' typical latency (ms): the first line's jobs take L ± `latencyJitter`. @defaultValue 60_000 */
  latencyMs: number;
  /** Fraction of L either way. @defaultValue 0.2 */
  latencyJitter: number;
  /** The second line's job durations (ms). @defaultValue 5-60 s */
  spreadMs: LatencyRange;
  /** Queries run first, unmeasured, so that the worker's poll schedule can learn. @defaultValue 100 */
  learningQueries: number;
  /** Queries measured once every learning query has its result. @defaultValue 200 */
  measuredQueries: number;
}

export const DEFAULT_DETECTION: DetectionSettings = {
  latencyMs: 60_000,
  latencyJitter: 0.2,
  spreadMs: { min: 5_000, max: 60_000 },
  learningQueries: 100,
  measuredQueries: 200,
};

/** One line: a worker with its default poll schedule against one distribution of job durations. */
export interface DetectionLine {
  /** What the remote jobs took, e.g. `L 60 s ±20 %` or `spread 5-60 s`. */
  line: string;
  job_latency_ms: LatencyRange;
  /** Seconds from scheduling the learning batch to its last result event. */
  learning_seconds: number;
  /** Seconds from scheduling the measured batch to its last result event. */
  measured_seconds: number;
  /** Measured queries that ended `completed` (the only ones with a lag). */
  completed: number;
  /** Measured queries that ended otherwise (none expected: the simulator injects no faults). */
  not_completed: number;
  /** Status GETs the simulator answered per measured query (all its polls, the detecting one included). */
  polls_per_query: Summary;
  /** Time of the first GET that found the job finished minus the time it finished (ms). */
  detection_lag_ms: Summary & { p95: number | null };
  /** The result event's created_at minus the time the job finished (ms): the lag plus the worker's own step. */
  event_lag_ms: Summary & { p95: number | null };
  /** p95 over the jobs of (detection lag / that job's duration). */
  lag_fraction_of_job_duration_p95: number | null;
  /** p95(detection lag) / the line's nominal latency (L; the spread's upper bound). */
  lag_p95_fraction_of_nominal: number | null;
}

export interface DetectionResult {
  settings: DetectionSettings & { setup: string; method: string };
  /** Jobs of L ± jitter. */
  latency: DetectionLine;
  /** Jobs spread over `spreadMs`. */
  spread: DetectionLine;
}

/** Line settings: the job durations, the nominal latency the lag is divided by, a key prefix. */
interface LineSpec {
  name: string;
  line: string;
  latency: LatencyRange;
  nominalMs: number;
}

/**
 * How soon the worker sees a finished remote job, and how many polls that costs, once its poll
 * schedule has seen a batch of jobs like them: a learning batch, then a measured batch, for jobs
 * of L ± 20 % and (side by side, own simulator, worker and key prefix) for a 5-60 s spread.
 */
export async function detectionScenario(
  ctx: BenchContext,
  settings: DetectionSettings,
): Promise<DetectionResult> {
  const l = settings.latencyMs;
  const jitter = Math.round(l * settings.latencyJitter);
  const fixed: LineSpec = {
    name: 'detect-l',
    line: `L ${l / 1000} s ±${settings.latencyJitter * 100} %`,
    latency: { min: l - jitter, max: l + jitter },
    nominalMs: l,
  };
  const spread: LineSpec = {
    name: 'detect-spread',
    line: `spread ${settings.spreadMs.min / 1000}-${settings.spreadMs.max / 1000} s`,
    latency: settings.spreadMs,
    nominalMs: settings.spreadMs.max,
  };
  ctx.say(
    `detection: ${settings.learningQueries} learning + ${settings.measuredQueries} measured queries per line ` +
      `(${fixed.line}; ${spread.line})`,
  );
  const [latencyLine, spreadLine] = await Promise.all([
    runLine(ctx, settings, fixed),
    runLine(ctx, settings, spread),
  ]);
  return {
    settings: {
      ...settings,
      setup:
        'two lines side by side, each with its own simulator in the bench process (no faults), its own ' +
        `\`concordance-worker work\` child (LOG_LEVEL ${ctx.logLevel}, default poll schedule, debounce 10 ms) and key prefix; ` +
        `${settings.learningQueries + settings.measuredQueries} patients per line with one ${CATEGORY} query each; ` +
        `the learning batch (${settings.learningQueries}) is scheduled at once and runs until every result event is in, ` +
        `then the measured batch (${settings.measuredQueries}) likewise, on the same worker`,
      method:
        "per measured query whose result event is completed, from the simulator's GET /_admin/jobs/:job_id: " +
        'polls = status_reads (every GET of the job); detection lag = first_finished_read_at (the GET that found it ' +
        'finished) - finishes_at; event lag = the result event created_at - finishes_at; ' +
        "job duration = finishes_at - submitted_at. lag_p95_fraction_of_nominal = p95(lag) / the line's nominal latency",
    },
    latency: latencyLine,
    spread: spreadLine,
  };
}

/** The summary of a sample with its p95 too, rounded to `digits`. */
function withP95(values: readonly number[], digits = 0): Summary & { p95: number | null } {
  const sorted = [...values].sort((a, b) => a - b);
  return { ...summarize(sorted, digits), p95: round(quantile(sorted, 0.95), digits) };
}

async function runLine(
  ctx: BenchContext,
  settings: DetectionSettings,
  spec: LineSpec,
): Promise<DetectionLine> {
  const simulator = await startBenchSimulator(ctx, {
    minMs: spec.latency.min,
    maxMs: spec.latency.max,
  });
  try {
    const total = settings.learningQueries + settings.measuredQueries;
    const line = await startWorkerLine(ctx, {
      name: spec.name,
      queries: { debounce_ms: 10 },
      simulatorUrl: simulator.url,
      patients: total,
    });
    try {
      // Generous: the slowest job, then as long again for a poll schedule that backs off.
      const timeoutMs = 2 * spec.latency.max + 120_000;
      const batch = async (list: readonly string[], resultsWanted: number, what: string) => {
        const t0 = Date.now();
        const t1 = await line.run(list, resultsWanted, {
          timeoutMs,
          what: `every result of the ${what} batch (${spec.line})`,
        });
        return round((t1 - t0) / 1_000, 1) ?? 0;
      };
      const learningSeconds = await batch(
        line.patients.slice(0, settings.learningQueries),
        settings.learningQueries,
        'learning',
      );
      ctx.say(`detection: ${spec.line}: learning batch done in ${learningSeconds} s`);
      const measuredPatients = new Set(line.patients.slice(settings.learningQueries));
      const measuredSeconds = await batch([...measuredPatients], total, 'measured');
      ctx.say(`detection: ${spec.line}: measured batch done in ${measuredSeconds} s`);

      const events = (await line.outbound.getJobs(['wait'], 0, -1))
        .map((job) => OutboundEventSchema.parse(job.data))
        .filter((event) => measuredPatients.has(event.patient_service_id));
      const polls: number[] = [];
      const lags: number[] = [];
      const eventLags: number[] = [];
      const fractions: number[] = [];
      let notCompleted = 0;
      await forEachLimit(events, 16, async (event) => {
        if (event.status !== 'completed' || event.remote_job_id === null) {
          notCompleted += 1;
          return;
        }
        const job = await simulatorJob(simulator.url, event.remote_job_id);
        const finishedAt = Date.parse(job.finishes_at);
        polls.push(job.status_reads);
        eventLags.push(Date.parse(event.created_at) - finishedAt);
        if (job.first_finished_read_at === null) return;
        const lag = Date.parse(job.first_finished_read_at) - finishedAt;
        lags.push(lag);
        const duration = finishedAt - Date.parse(job.submitted_at);
        if (duration > 0) fractions.push(lag / duration);
      });
      const lag = withP95(lags);
      return {
        line: spec.line,
        job_latency_ms: spec.latency,
        learning_seconds: learningSeconds,
        measured_seconds: measuredSeconds,
        completed: lags.length,
        not_completed: notCompleted,
        polls_per_query: summarize(polls, 2),
        detection_lag_ms: lag,
        event_lag_ms: withP95(eventLags),
        lag_fraction_of_job_duration_p95: withP95(fractions, 3).p95,
        lag_p95_fraction_of_nominal: lag.p95 === null ? null : round(lag.p95 / spec.nominalMs, 3),
      };
    } finally {
      await line.close();
    }
  } finally {
    await simulator.close();
  }
}
