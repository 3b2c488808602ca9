import type { Logger } from '../observability/logger.ts';
import { startTracing, type TracingHandle } from '../observability/tracing/start-tracing.ts';
import type { TracingEnv } from '../observability/tracing/tracing-env.ts';
import { packageInfo } from '../package-root.ts';

/**
 * Starts the process's tracing for a role (`ingest`, `work`, `start`) from the standard `OTEL_*`
 * variables (docs/opentelemetry.md): `cw.role` and the package's version on the resource. Off
 * unless an OTLP endpoint is set. Called once per process, before the app is built; the role's
 * close shuts it down (the spans left are exported, bounded by the export timeout).
 * @throws TracingEnvError (`ERR_TRACING_ENV`) when a variable holds an invalid value: the start
 *   fails as for any other configuration error
 */
export async function startRoleTracing(
  role: string,
  logger: Logger,
  env: TracingEnv = process.env,
): Promise<TracingHandle> {
  const tracing = await startTracing({
    env,
    role,
    serviceVersion: packageInfo().version,
    onShutdownError: (err) =>
      logger.warn(
        { err: { name: err instanceof Error ? err.name : 'unknown' } },
        'tracing: the spans left at shutdown could not be exported',
      ),
  });
  if (tracing.enabled) logger.info({ role }, 'tracing on: spans exported over OTLP/HTTP');
  return tracing;
}

/**
 * The role's tracing: the one it was given (`start`, a test: the giver shuts it down), else one
 * it starts and owns.
 */
export async function roleTracing(
  given: TracingHandle | undefined,
  role: string,
  logger: Logger,
): Promise<{ tracing: TracingHandle; owned: boolean }> {
  if (given !== undefined) return { tracing: given, owned: false };
  return { tracing: await startRoleTracing(role, logger), owned: true };
}
