import type { FaultProfile, RouteFault } from '../fault-profile.ts';
import { ANY_ROUTE } from '../route-keys.ts';
import { seededRandom, type Random } from '../seeded-random.ts';
import { NO_FAULT, type FaultDecision } from './fault-decision.ts';

/** Holds the active fault profile and decides, reproducibly from the seed, which request fails. */
export class FaultInjector {
  #profile: FaultProfile = {};
  /** Requests left for rules with `times`, keyed by route key. */
  #remaining = new Map<string, number>();
  readonly #seed: number;
  #random: Random;

  constructor(seed: number, profile: FaultProfile = {}) {
    this.#seed = seed;
    this.#random = seededRandom(seed, 'faults');
    this.replace(profile);
  }

  get profile(): FaultProfile {
    return this.#profile;
  }

  /** Installs a new profile; its `times` counters and the random stream start afresh. */
  replace(profile: FaultProfile): void {
    this.#profile = profile;
    this.#random = seededRandom(this.#seed, 'faults');
    this.#remaining = new Map(
      Object.entries(profile.routes ?? {}).flatMap(([key, rule]) =>
        rule?.times === undefined ? [] : [[key, rule.times] as const],
      ),
    );
  }

  clear(): void {
    this.replace({});
  }

  #activeRule(routeKey: string | undefined): RouteFault | undefined {
    const routes = this.#profile.routes ?? {};
    for (const key of [routeKey, ANY_ROUTE]) {
      if (key === undefined) continue;
      const rule = routes[key as keyof typeof routes];
      if (rule === undefined) continue;
      const left = this.#remaining.get(key);
      if (left === undefined) return rule;
      if (left > 0) {
        this.#remaining.set(key, left - 1);
        return rule;
      }
    }
    return undefined;
  }

  /** `routeKey` is `<METHOD> <route pattern>`, undefined for a path no route matches. */
  decide(routeKey: string | undefined): FaultDecision {
    const rule = this.#activeRule(routeKey);
    if (rule === undefined) return NO_FAULT;
    // Always four draws per matching request, so one rule's outcome never shifts the next request's.
    const [hang, limit, error, malformed] = [0, 1, 2, 3].map(() => this.#random.next()) as [
      number,
      number,
      number,
      number,
    ];
    const delayMs = rule.added_latency_ms ?? 0;
    if (hang < (rule.hang_rate ?? 0)) return { delayMs, action: { kind: 'hang' } };
    if (limit < (rule.rate_limit_rate ?? 0)) {
      return {
        delayMs,
        action: {
          kind: 'rate_limit',
          retryAfterS: rule.retry_after_s ?? 1,
          format: rule.retry_after_format ?? 'seconds',
        },
      };
    }
    if (error < (rule.error_rate ?? 0)) {
      return { delayMs, action: { kind: 'error', status: rule.error_status ?? 503 } };
    }
    if (malformed < (rule.malformed_rate ?? 0)) {
      return {
        delayMs,
        action: { kind: 'malformed', body: rule.malformed_body ?? 'invalid_json' },
      };
    }
    return { delayMs, action: { kind: 'none' } };
  }
}
