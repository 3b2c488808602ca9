import type { ServiceHostHealth } from '../observability/service-health.ts';

/** The `service` part of a worker's `/readyz` body. */
export interface ServiceReadiness {
  /** False when the last request to a host failed; null before the first request. */
  up: boolean | null;
  hosts: {
    host: string;
    up: boolean;
    consecutive_failures: number;
    last_success_at: string | null;
    last_failure_at: string | null;
    /** HTTP status or network code, and the route template, of the last failure. */
    last_failure: { status: string; endpoint: string } | null;
  }[];
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The service's health as a worker's `/readyz` reports it, beside its checks and without deciding
 * its status: a worker that cannot reach the service is still ready (it keeps its submissions and
 * retries them; see docs/operations.md).
 */
export function serviceReadiness(hosts: readonly ServiceHostHealth[]): ServiceReadiness {
  return {
    up: hosts.length === 0 ? null : hosts.every((h) => h.up),
    hosts: hosts.map((h) => ({
      host: h.host,
      up: h.up,
      consecutive_failures: h.consecutiveFailures,
      last_success_at: iso(h.lastSuccessAt),
      last_failure_at: iso(h.lastFailureAt),
      last_failure: h.lastFailure,
    })),
  };
}
