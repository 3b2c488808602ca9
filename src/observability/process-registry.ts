import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * prom-client's default metrics that are gauges named `_total`, which `promtool check metrics`
 * refuses (a `_total` suffix belongs to counters). Each one is the sum of a by-type gauge that
 * stays (`nodejs_active_handles`, `nodejs_active_requests`, `nodejs_active_resources`).
 */
export const DROPPED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
] as const;

/** A process's registry: prom-client's default process metrics, less {@link DROPPED_DEFAULT_METRICS}. */
export function processRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of DROPPED_DEFAULT_METRICS) registry.removeSingleMetric(name);
  return registry;
}
