import type { FastifyServerOptions } from 'fastify';
import { FaultProfileSchema, type FaultProfile } from './fault-profile.ts';
import { DEFAULT_MAX_LIST_LIMIT } from './relationships/list-query.ts';

/** Options of {@link startSimulator} and {@link buildSimulatorApp}. */
export interface SimulatorOptions {
  /** TCP port; 0 picks any free port. @defaultValue 8090 */
  port?: number;
  /** @defaultValue '127.0.0.1' */
  host?: string;
  /** Keys accepted in `x-api-key`; at least one. */
  apiKeys: string[];
  /** Key for the `/_admin` routes (header `x-admin-key`). @defaultValue apiKeys[0] */
  adminKey?: string;
  /** Seeds the graph, ids, job durations and faults. @defaultValue 1 */
  seed?: number;
  /** Fault profile active from the start. @defaultValue no faults */
  faults?: FaultProfile;
  /** Concordance job duration, uniform between the bounds. @defaultValue `{ minMs: 1000, maxMs: 4000 }` */
  latency?: { minMs: number; maxMs: number };
  /** Requests kept for `GET /_admin/requests`. @defaultValue 10_000 */
  requestLogSize?: number;
  /** Relationships in the simulated graph. @defaultValue 5_000 */
  relationshipCount?: number;
  /**
   * The largest `limit` a relationships page may ask for; a larger one is answered 422 at
   * `['query', 'limit']` (the interface states no maximum). @defaultValue 1_000
   */
  maxListLimit?: number;
  /** Largest request body accepted; larger ones get 413. @defaultValue 5 MiB */
  bodyLimitBytes?: number;
  /** Fastify/pino logger: false, true, or pino options. @defaultValue false */
  logger?: FastifyServerOptions['logger'];
  /** How long a finished job stays readable before it answers not_exists. @defaultValue 3_600_000 (1 h) */
  jobTtlMs?: number;
  /** The clock, in epoch milliseconds; tests inject one to step through a job's life. @defaultValue Date.now */
  now?: () => number;
}

export type ResolvedSimulatorOptions = Required<Omit<SimulatorOptions, 'faults'>> & {
  faults: FaultProfile;
};

const positiveInt = (name: string, value: number, min: number) => {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`${name} must be a whole number >= ${min}, got ${value}`);
  }
};

/** Applies the defaults and rejects impossible values early, with a message naming the option. */
export function resolveSimulatorOptions(options: SimulatorOptions): ResolvedSimulatorOptions {
  const apiKeys = options.apiKeys.filter((k) => k.length > 0);
  const [firstKey] = apiKeys;
  if (firstKey === undefined) throw new RangeError('apiKeys must hold at least one non-empty key');
  const resolved: ResolvedSimulatorOptions = {
    port: options.port ?? 8090,
    host: options.host ?? '127.0.0.1',
    apiKeys,
    adminKey: options.adminKey ?? firstKey,
    seed: options.seed ?? 1,
    faults: FaultProfileSchema.parse(options.faults ?? {}),
    latency: options.latency ?? { minMs: 1000, maxMs: 4000 },
    requestLogSize: options.requestLogSize ?? 10_000,
    relationshipCount: options.relationshipCount ?? 5_000,
    maxListLimit: options.maxListLimit ?? DEFAULT_MAX_LIST_LIMIT,
    bodyLimitBytes: options.bodyLimitBytes ?? 5 * 1024 * 1024,
    logger: options.logger ?? false,
    jobTtlMs: options.jobTtlMs ?? 3_600_000,
    now: options.now ?? Date.now,
  };
  positiveInt('port', resolved.port, 0);
  if (resolved.port > 65_535) throw new RangeError(`port must be <= 65535, got ${resolved.port}`);
  positiveInt('seed', resolved.seed, 0);
  positiveInt('latency.minMs', resolved.latency.minMs, 0);
  positiveInt('latency.maxMs', resolved.latency.maxMs, resolved.latency.minMs);
  positiveInt('requestLogSize', resolved.requestLogSize, 0);
  positiveInt('relationshipCount', resolved.relationshipCount, 1);
  positiveInt('maxListLimit', resolved.maxListLimit, 1);
  positiveInt('bodyLimitBytes', resolved.bodyLimitBytes, 1);
  positiveInt('jobTtlMs', resolved.jobTtlMs, 0);
  if (resolved.adminKey.length === 0) throw new RangeError('adminKey must not be empty');
  return resolved;
}
