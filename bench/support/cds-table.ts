import type { CdsHooksResult } from '../scenarios/cds-hooks.ts';
import { fmt, type TableRow } from './table.ts';

/** The `cds_hooks` scenario's lines of the bench's table. */
export function cdsHooksRows(c: CdsHooksResult): TableRow[] {
  const load = `${c.settings.clients} concurrent patient-view calls, ${c.settings.seconds} s, ${fmt(c.settings.patients)} patients`;
  const statuses = Object.entries(c.statuses)
    .map(([status, count]) => `${status} ${fmt(count)}`)
    .join(', ');
  return [
    {
      scenario: 'cds_hooks',
      figure: 'cds_hooks_p99_ms',
      value: fmt(c.cds_hooks_p99_ms, 1, 'ms'),
      setup: `${load}; target ≤ ${c.target_p99_ms}; a fresh ES384 JWT per call`,
    },
    {
      scenario: 'cds_hooks',
      figure: 'latency p50 / max',
      value: `${fmt(c.latency_ms.p50, 1)} / ${fmt(c.latency_ms.max, 1)} ms`,
      setup: load,
    },
    {
      scenario: 'cds_hooks',
      figure: 'calls answered',
      value: fmt(c.calls_per_s, 0, '/s'),
      setup: `${statuses}; ${fmt(c.cards_per_call, 2)} cards per call`,
    },
    {
      scenario: 'cds_hooks',
      figure: 'CPU per call',
      value: `${fmt(c.cpu_ms_per_call.ingest, 3)} / ${fmt(c.cpu_ms_per_call.redis, 3)} / ${fmt(c.cpu_ms_per_call.load_generator, 3)} ms`,
      setup: 'ingest child / redis-server / bench (load generator, JWTs signed ahead)',
    },
    {
      scenario: 'cds_hooks',
      figure: 'ingest RSS',
      value: fmt(c.ingest_rss_mib, 0, 'MiB'),
      setup: `after the run; peak ${fmt(c.ingest_rss_peak_mib, 0, 'MiB')}, idle before the calls ${fmt(c.ingest_rss_idle_mib, 0, 'MiB')}`,
    },
  ];
}
