import type { RedisClient } from '../queues/redis-client.ts';
import { Counter, type Registry } from 'prom-client';
import { canonicalSystem, problemSystemOf, type ProblemSystem } from './problem-code-systems.ts';

/** One problem code that mapped to nothing, and how many times it was reported. */
export interface UnmappedCode {
  system: string;
  code: string;
  count: number;
}

/** The sorted set of unmapped codes (member `system|code`, score = reports) under `prefix`. */
export function unmappedKey(prefix: string): string {
  return `${prefix}:terminology:unmapped`;
}

/** Codes longer than this are counted (metric) but not listed: they are not codes. */
const MAX_LISTED_CODE = 64;

function counter(registry: Registry): Counter<'system'> {
  const existing = registry.getSingleMetric('cw_unmapped_problems_total');
  if (existing instanceof Counter) return existing as Counter<'system'>;
  return new Counter({
    name: 'cw_unmapped_problems_total',
    help: 'Problems (conditions) reported with no ICD-10-CM coding that no terminology source mapped, by code system (snomed, icd9cm, other).',
    labelNames: ['system'],
    registers: [registry],
  });
}

/**
 * Problems that map to nothing: a counter by code system (`cw_unmapped_problems_total{system}`)
 * and a Redis sorted set of `system|code` -> reports, which `concordance-worker status` lists (the
 * top codes, never a patient). Counted once per problem in each message that reports it.
 */
export class UnmappedProblems {
  readonly #redis: RedisClient;
  readonly #key: string;
  readonly #counter: Counter<'system'> | undefined;

  constructor(options: { redis: RedisClient; prefix: string; registry?: Registry | undefined }) {
    this.#redis = options.redis;
    this.#key = unmappedKey(options.prefix);
    this.#counter = options.registry === undefined ? undefined : counter(options.registry);
  }

  /** Counts the codings of one unmapped problem (its first coding names it in the list). */
  async record(codings: readonly { system: string; code: string }[]): Promise<void> {
    const first = codings[0];
    const system: ProblemSystem = first === undefined ? 'other' : problemSystemOf(first.system);
    this.#counter?.inc({ system });
    if (first === undefined || first.code.trim().length > MAX_LISTED_CODE) return;
    await this.#redis.zincrby(
      this.#key,
      1,
      `${canonicalSystem(first.system)}|${first.code.trim()}`,
    );
  }
}

/** The `limit` most reported unmapped codes, most reported first (`status`). */
export async function topUnmappedProblems(
  redis: RedisClient,
  prefix: string,
  limit = 20,
): Promise<UnmappedCode[]> {
  const flat = await redis.zrevrange(unmappedKey(prefix), 0, limit - 1, 'WITHSCORES');
  const out: UnmappedCode[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const member = flat[i] ?? '';
    const bar = member.lastIndexOf('|');
    out.push({
      system: member.slice(0, bar),
      code: member.slice(bar + 1),
      count: Number(flat[i + 1]),
    });
  }
  return out;
}
