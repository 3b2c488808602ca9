import type { BenchContext } from './fixtures.ts';
import { ChildProc, cpuMeter, waitForLine } from './processes.ts';

/**
 * The three variants of the `tracing` scenario, measured side by side in one run: the message
 * trace and OpenTelemetry both off (the baseline), the message trace alone (to tell the two costs
 * apart), both on at the sampling docs/opentelemetry.md recommends for production, and both on
 * with every span sampled.
 */
export const TRACING_VARIANTS = ['off', 'trace_only', 'recommended', 'full_sampling'] as const;
export type TracingVariant = (typeof TRACING_VARIANTS)[number];

/** The sampler of each variant, as the standard OTEL_TRACES_SAMPLER variables set it. */
const SAMPLERS: Record<Exclude<TracingVariant, 'off' | 'trace_only'>, Record<string, string>> = {
  recommended: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
  full_sampling: { OTEL_TRACES_SAMPLER: 'always_on' },
};

/** Counts of the sink per variant: export requests, body bytes, spans. */
export interface SinkCounts {
  requests: number;
  bytes: number;
  spans: number;
}

/** The discard OTLP/HTTP sink (`bench/otlp-sink.ts`), a child process of its own. */
export interface OtlpSink {
  /** Its base URL; a variant's endpoint is `<url>/<variant>`. */
  url: string;
  pid: number;
  /** CPU (ms) the sink used since it started; null when /proc cannot be read. */
  cpuMs(): number | null;
  counts(): Promise<Record<string, SinkCounts>>;
  close(): Promise<void>;
}

export async function startOtlpSink(ctx: BenchContext): Promise<OtlpSink> {
  const proc = new ChildProc(
    'otlp sink',
    process.execPath,
    [new URL('../otlp-sink.ts', import.meta.url).pathname],
    {},
  );
  const remove = ctx.cleanup.add('otlp sink', () => proc.stop());
  const { port } = JSON.parse(await waitForLine(proc, '"port"')) as { port: number };
  const url = `http://127.0.0.1:${port}`;
  const cpu = cpuMeter(proc.pid);
  return {
    url,
    pid: proc.pid,
    cpuMs: () => cpu.used(),
    async counts() {
      const response = await fetch(`${url}/stats`);
      return (await response.json()) as Record<string, SinkCounts>;
    },
    async close() {
      await proc.stop();
      remove();
    },
  };
}

/**
 * The environment a variant's child processes get on top of their usual one: TRACE_ENABLED, and
 * for the variants with OpenTelemetry the endpoint (the sink, under the variant's own path) and the
 * sampler. Only this scenario's children get these variables.
 */
export function variantEnv(variant: TracingVariant, sink: OtlpSink): Record<string, string> {
  if (variant === 'off') return { TRACE_ENABLED: 'false' };
  if (variant === 'trace_only') return { TRACE_ENABLED: 'true' };
  return {
    TRACE_ENABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: `${sink.url}/${variant}`,
    OTEL_SERVICE_NAME: 'concordance-worker-bench',
    ...SAMPLERS[variant],
  };
}

/** A variant's environment as the JSON shows it (the sink's port left out). */
export function variantSetup(variant: TracingVariant): string {
  if (variant === 'off') return 'TRACE_ENABLED=false, no OTEL_* variable (OpenTelemetry off)';
  if (variant === 'trace_only') return 'TRACE_ENABLED=true, no OTEL_* variable (OpenTelemetry off)';
  const sampler = Object.entries(SAMPLERS[variant])
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  return `TRACE_ENABLED=true, OTEL_EXPORTER_OTLP_ENDPOINT=<discard sink>/${variant}, ${sampler}`;
}

/** (off − on) ÷ off: the fraction a figure dropped from the baseline; null when either is. */
export function dropOf(off: number | null, on: number | null): number | null {
  if (off === null || on === null || off === 0) return null;
  return Math.round(((off - on) / off) * 1e4) / 1e4;
}

/**
 * Runs the loops in `rounds` rounds, each giving every loop `amount / rounds` (seconds, or queries
 * for a pipeline line) in turn, the order rotated by one each round so that no variant always runs
 * first or right after another; `between` runs at the end of each round (the no-op baseline).
 */
export async function interleaveRotating(
  loops: readonly { run(amount: number): Promise<void> }[],
  amount: number,
  rounds: number,
  between: (round: number) => Promise<void> = async () => undefined,
): Promise<void> {
  for (let r = 0; r < rounds; r += 1) {
    for (let k = 0; k < loops.length; k += 1)
      await loops[(r + k) % loops.length]?.run(amount / rounds);
    await between(r);
  }
}
