import { performance } from 'node:perf_hooks';
import { processCpuMs } from './processes.ts';
import { selfCpuMs, type SlicedLoop } from './raw-bullmq.ts';

/** What a closed loop measured, summed over its slices. */
export interface ClosedLoopTotals {
  /** Per request, send to answer (ms). */
  latencies: number[];
  /** Answers by HTTP status (`error` for a failed request). */
  statuses: Record<string, number>;
  /** Items answered 202: `itemsPerRequest` per 202. */
  accepted: number;
  /** Measured seconds. */
  elapsed: number;
  /** CPU ms of each watched process (null when /proc could not be read), in the order given. */
  cpuMs: (number | null)[];
  /** CPU ms of the bench process (the load generator). */
  selfMs: number;
}

/**
 * A closed loop as a {@link SlicedLoop}: `clients` senders, each sending (`send` answers the HTTP
 * status) back to back; each slice adds its time, answers and the CPU of `pids` (the ingest child,
 * redis-server) and of the bench process. A warm-up slice counts nothing.
 */
export function closedLoopOf(
  send: () => Promise<number>,
  options: { clients: number; pids: readonly (number | undefined)[]; itemsPerRequest?: number },
): SlicedLoop<ClosedLoopTotals> {
  const { clients, pids, itemsPerRequest = 1 } = options;
  const totals: ClosedLoopTotals = {
    latencies: [],
    statuses: {},
    accepted: 0,
    elapsed: 0,
    cpuMs: pids.map(() => 0),
    selfMs: 0,
  };
  return {
    async run(seconds, warmup = false) {
      const self = process.cpuUsage();
      const before = pids.map((pid) => processCpuMs(pid));
      const start = performance.now();
      const deadline = start + seconds * 1_000;
      const statuses: Record<string, number> = {};
      const latencies: number[] = [];
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (performance.now() < deadline) {
            const sent = performance.now();
            const status = await send().catch(() => 'error' as const);
            statuses[status] = (statuses[status] ?? 0) + 1;
            latencies.push(performance.now() - sent);
          }
        }),
      );
      if (warmup) {
        if (Object.keys(statuses).some((status) => status !== '202')) {
          throw new Error(`the warm-up was not all accepted: ${JSON.stringify(statuses)}`);
        }
        return;
      }
      totals.elapsed += (performance.now() - start) / 1_000;
      totals.selfMs += selfCpuMs(self);
      totals.latencies.push(...latencies);
      for (const [status, count] of Object.entries(statuses)) {
        totals.statuses[status] = (totals.statuses[status] ?? 0) + count;
      }
      totals.accepted += (statuses['202'] ?? 0) * itemsPerRequest;
      totals.cpuMs = totals.cpuMs.map((sum, i) => {
        const [was, now] = [before[i], processCpuMs(pids[i])];
        return sum === null || was === undefined || now === undefined ? null : sum + now - was;
      });
    },
    result: () => totals,
    close: async () => undefined,
  };
}

/** `ms` of CPU per item, null when either is missing. */
export const perItem = (ms: number | null | undefined, items: number): number | null =>
  ms === null || ms === undefined || items === 0 ? null : Math.round((ms / items) * 1e4) / 1e4;
