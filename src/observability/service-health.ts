import { Gauge, type Registry } from 'prom-client';
import type { Logger } from './logger.ts';

/** One attempt at the service, as the client's `onResponse` reports it. */
export interface ServiceAttempt {
  /** `host[:port]` of the service (never a path, a query or a credential). */
  host: string;
  /** Route template, e.g. `POST /v1/concordance`. */
  endpoint: string;
  status: number | 'network' | 'timeout';
  /** The network failure's code (`ECONNREFUSED`, `ETIMEDOUT`, ...) when no HTTP answer came. */
  code?: string;
}

/** What this process knows of one service host, from its own requests. */
export interface ServiceHostHealth {
  host: string;
  /** False while the last request failed (see {@link isServiceFailure}). */
  up: boolean;
  /** Failed requests since the last one that did not fail. */
  consecutiveFailures: number;
  /** Epoch ms of the last request that did not fail, else null. */
  lastSuccessAt: number | null;
  /** Epoch ms of the last failed request, else null. */
  lastFailureAt: number | null;
  /** The last failure: HTTP status or network error code, and the route template. */
  lastFailure: { status: string; endpoint: string } | null;
}

/** Where a host's health is written for other processes (`status`): see ServiceHealthRecord. */
export type ServiceHealthSink = (health: ServiceHostHealth) => Promise<void>;

/**
 * HTTP statuses that say the service cannot serve us now: it refuses the key (401, 403), a proxy
 * refuses us (407), it timed out or is overloaded (408, 429), or it failed (5xx). Any other answer
 * (2xx, and 4xx about the request itself: 400, 404, 409, 422) means it is up.
 */
const FAILING_STATUSES = new Set([401, 403, 407, 408, 429]);

export function isServiceFailure(status: ServiceAttempt['status']): boolean {
  return typeof status !== 'number' || status >= 500 || FAILING_STATUSES.has(status);
}

/** The failure as logs and `status` show it: `503`, or `ECONNREFUSED` (`timeout` without a code). */
export function failureStatus({ status, code }: ServiceAttempt): string {
  return typeof status === 'number' ? String(status) : (code ?? status);
}

/** At most one "still failing" line per host per this many ms. */
export const FAILURE_SUMMARY_INTERVAL_MS = 60_000;
/** A host's health is written to its sink on every change of `up`, else at most this often. */
export const HEALTH_RECORD_INTERVAL_MS = 5_000;

export interface ServiceHealthOptions {
  registry: Registry;
  logger: Logger;
  /** @defaultValue {@link FAILURE_SUMMARY_INTERVAL_MS} */
  summaryIntervalMs?: number;
  /** @defaultValue {@link HEALTH_RECORD_INTERVAL_MS} */
  recordIntervalMs?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

interface HostState extends ServiceHostHealth {
  /** Failures since the last line logged about them. */
  unlogged: number;
  lastLineAt: number;
  lastRecordAt: number;
}

/** An existing metric of the registry (two roles in one process share it), else a new one. */
function reuse<M>(registry: Registry, name: string, make: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? make();
}

/**
 * The service's health as this process's requests find it, per host: fed every attempt (retries
 * included) through the service client's `onResponse`. It sets `cw_service_up{host}` and
 * `cw_service_consecutive_failures{host}`, and logs without flooding: a warn line at the first
 * failure after a success (or the first request), then at most one warn line per host per
 * `summaryIntervalMs` counting the failures since, and one info line when the service answers
 * again. Each line names the host and the failing status (HTTP status or network code), never a
 * path, a query string or the key. A sink, when set, gets each host's health for `status`.
 */
export class ServiceHealth {
  readonly up: Gauge<'host'>;
  readonly consecutiveFailures: Gauge<'host'>;
  readonly #logger: Logger;
  readonly #summaryMs: number;
  readonly #recordMs: number;
  readonly #now: () => number;
  readonly #hosts = new Map<string, HostState>();
  #sink: ServiceHealthSink | undefined;

  constructor(options: ServiceHealthOptions) {
    const { registry } = options;
    const registers = [registry];
    this.#logger = options.logger;
    this.#summaryMs = options.summaryIntervalMs ?? FAILURE_SUMMARY_INTERVAL_MS;
    this.#recordMs = options.recordIntervalMs ?? HEALTH_RECORD_INTERVAL_MS;
    this.#now = options.now ?? Date.now;
    this.up = reuse(
      registry,
      'cw_service_up',
      () =>
        new Gauge({
          name: 'cw_service_up',
          help: "1 when this process's last request to the Clinical Graph Service host succeeded (any answer but 401, 403, 407, 408, 429 or 5xx), 0 when it failed (such an answer, a network error or a timeout).",
          labelNames: ['host'],
          registers,
        }),
    );
    this.consecutiveFailures = reuse(
      registry,
      'cw_service_consecutive_failures',
      () =>
        new Gauge({
          name: 'cw_service_consecutive_failures',
          help: "Failed requests to the Clinical Graph Service host since this process's last one that succeeded (retries included).",
          labelNames: ['host'],
          registers,
        }),
    );
  }

  /** Writes each host's health to `sink` from now on (errors are swallowed: health is advice). */
  recordTo(sink: ServiceHealthSink | undefined): void {
    this.#sink = sink;
  }

  /** Every host this process talked to, in the order first seen. */
  hosts(): ServiceHostHealth[] {
    return [...this.#hosts.values()].map(publicOf);
  }

  /** Takes one attempt's outcome into account (the client's `onResponse`; never throws). */
  observe(attempt: ServiceAttempt): void {
    const now = this.#now();
    const { host } = attempt;
    let state = this.#hosts.get(host);
    const first = state === undefined;
    state ??= {
      host,
      up: true,
      consecutiveFailures: 0,
      lastSuccessAt: null,
      lastFailureAt: null,
      lastFailure: null,
      unlogged: 0,
      lastLineAt: 0,
      lastRecordAt: 0,
    };
    this.#hosts.set(host, state);
    const wasUp = state.up;
    if (isServiceFailure(attempt.status)) {
      this.#failed(state, attempt, now, first || wasUp);
    } else {
      this.#succeeded(state, now, !wasUp);
    }
    this.up.set({ host }, state.up ? 1 : 0);
    this.consecutiveFailures.set({ host }, state.consecutiveFailures);
    if (first || wasUp !== state.up || now - state.lastRecordAt >= this.#recordMs) {
      state.lastRecordAt = now;
      this.#record(publicOf(state));
    }
  }

  #record(health: ServiceHostHealth): void {
    const sink = this.#sink;
    if (sink === undefined) return;
    try {
      sink(health).catch(() => undefined);
    } catch {
      // A sink that throws must not fail a request.
    }
  }

  #failed(state: HostState, attempt: ServiceAttempt, now: number, firstFailure: boolean): void {
    const status = failureStatus(attempt);
    state.up = false;
    state.consecutiveFailures += 1;
    state.lastFailureAt = now;
    state.lastFailure = { status, endpoint: attempt.endpoint };
    state.unlogged += 1;
    if (!firstFailure && now - state.lastLineAt < this.#summaryMs) return;
    const fields = {
      service_host: state.host,
      status,
      endpoint: attempt.endpoint,
      consecutive_failures: state.consecutiveFailures,
      last_success_at: state.lastSuccessAt === null ? null : new Date(state.lastSuccessAt),
    };
    if (firstFailure) {
      this.#logger.warn(fields, 'service request failed');
    } else {
      this.#logger.warn(
        { ...fields, failures: state.unlogged, since_ms: now - state.lastLineAt },
        'service requests still failing',
      );
    }
    state.unlogged = 0;
    state.lastLineAt = now;
  }

  #succeeded(state: HostState, now: number, recovered: boolean): void {
    if (recovered) {
      this.#logger.info(
        {
          service_host: state.host,
          failures: state.consecutiveFailures,
          failing_ms: state.lastSuccessAt === null ? null : now - state.lastSuccessAt,
        },
        'service answering again',
      );
    }
    state.up = true;
    state.consecutiveFailures = 0;
    state.lastSuccessAt = now;
    state.unlogged = 0;
  }
}

function publicOf(state: HostState): ServiceHostHealth {
  const { host, up, consecutiveFailures, lastSuccessAt, lastFailureAt, lastFailure } = state;
  return { host, up, consecutiveFailures, lastSuccessAt, lastFailureAt, lastFailure };
}
