import { Counter, type Registry } from 'prom-client';

/**
 * The counter `name` of `registry` when it already has one (a second app or server on one
 * registry), else a new one registered there with `help` and `labelNames`.
 */
export function registryCounter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: [registry] });
}
