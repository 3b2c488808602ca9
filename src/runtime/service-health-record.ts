import { z } from 'zod';
import type { ServiceHostHealth } from '../observability/service-health.ts';
import type { RedisClient } from '../queues/redis-client.ts';

/** The hash of the service's health as the workers last found it (field: `host[:port]`). */
export function serviceHealthKey(prefix: string): string {
  return `${prefix}:service:health`;
}

/** A host nobody reported on for this long drops out with the whole hash (it expires). */
export const SERVICE_HEALTH_TTL_MS = 24 * 3_600_000;

const ReportedHealthSchema = z.object({
  host: z.string().min(1),
  up: z.boolean(),
  consecutive_failures: z.int().min(0),
  last_success_at: z.number().nullable(),
  last_failure_at: z.number().nullable(),
  last_failure: z.object({ status: z.string(), endpoint: z.string() }).nullable(),
  reported_at: z.number(),
});

/** One host's health as a worker last reported it (epoch ms). */
export type ReportedServiceHealth = z.infer<typeof ReportedHealthSchema>;

/**
 * The service's health in Redis, so that `concordance-worker status` (another process) can show
 * it: each worker's ServiceHealth writes a host's state on every change and at most every few
 * seconds otherwise; the last writer wins. Only the host, times, counts, an HTTP status or a
 * network code and a route template: no patient, no path, no key.
 */
export class ServiceHealthRecord {
  readonly #redis: RedisClient;
  readonly #key: string;

  constructor(redis: RedisClient, prefix: string) {
    this.#redis = redis;
    this.#key = serviceHealthKey(prefix);
  }

  async write(health: ServiceHostHealth, now = Date.now()): Promise<void> {
    const reported: ReportedServiceHealth = {
      host: health.host,
      up: health.up,
      consecutive_failures: health.consecutiveFailures,
      last_success_at: health.lastSuccessAt,
      last_failure_at: health.lastFailureAt,
      last_failure: health.lastFailure,
      reported_at: now,
    };
    await this.#redis
      .multi()
      .hset(this.#key, health.host, JSON.stringify(reported))
      .pexpire(this.#key, SERVICE_HEALTH_TTL_MS)
      .exec();
  }

  /** Every host reported on, most recently reported first; entries that do not parse are left out. */
  async read(): Promise<ReportedServiceHealth[]> {
    const all = await this.#redis.hgetall(this.#key);
    const hosts: ReportedServiceHealth[] = [];
    for (const json of Object.values(all)) {
      let value: unknown;
      try {
        value = JSON.parse(json);
      } catch {
        continue;
      }
      const parsed = ReportedHealthSchema.safeParse(value);
      if (parsed.success) hosts.push(parsed.data);
    }
    return hosts.sort((a, b) => b.reported_at - a.reported_at);
  }
}
