import { LRUCache } from 'lru-cache';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config-schema.ts';
import type { Crosswalk, CrosswalkPlan } from '../identity/crosswalk.ts';
import { IngestMetrics } from './ingest-metrics.ts';

/** Where a local id's updates go, and what the commit script must check of it. */
export type LocatedPatient =
  /** No lookup entry: the commit creates the patient (`plan`), unless another writer did first. */
  | { kind: 'new'; patientServiceId: string; plan: CrosswalkPlan }
  | {
      kind: 'known';
      patientServiceId: string;
      /**
       * What the commit script verifies (`CommitInput.verify`): the lookup entry still names this
       * service id and no merge retired it. Absent for an id found through merges, or whose entry
       * lives in another slot than the patient's keys (after a key rotation or repartition): those
       * are looked up in Redis each time and never cached.
       */
      verify?: { lookupKey: string; retiredKey: string };
      /** True when the service id came from the cache (no round trip was made). */
      cached: boolean;
    };

/** `ingest.crosswalk_cache.max_entries` by default: about 20 MiB at most. */
export const DEFAULT_CACHE_ENTRIES = 100_000;

/** How a {@link PatientLocator.locate} went, for `cw_crosswalk_cache_lookups_total`. */
export type CacheOutcome = 'hit' | 'miss' | 'stale';

export interface PatientLocatorOptions {
  crosswalk: Crosswalk;
  /**
   * Local ids whose service id is kept in the process (`ingest.crosswalk_cache.max_entries`), the
   * least recently used dropped first; 0 turns the cache off (every update looks its patient up).
   */
  maxEntries: number;
  /** Counts each cache hit and miss, and each cached entry found stale by a commit. */
  onLookup?: (outcome: CacheOutcome) => void;
}

/** The hash-tagged part of a key (its slot): the text before its last `:<kind>:` segment. */
function prefixOf(key: string, kind: string): string {
  return key.slice(0, key.lastIndexOf(`:${kind}:`));
}

/**
 * Finds the patient a local id's updates go to, without a Redis round trip for a patient seen
 * lately: an in-process LRU (`lru-cache`) maps the local id's lookup key (the HMAC of the id, never
 * the id itself) to its service id. A cached id is a hint, never trusted: every commit that uses it
 * checks, inside its own script and before writing anything, that the lookup entry still names it
 * and that no merge retired it (`CommitInput.verify`), so purges, merges, re-created patients and
 * key rotations by any process are caught by the next commit, which answers `stale` or `retired`:
 * the caller then {@link forget}s the entry and locates the id again. Nothing is written on a
 * stale answer, so the cache never makes an update land on the wrong patient.
 */
export class PatientLocator {
  readonly #crosswalk: Crosswalk;
  readonly #cache: LRUCache<string, string> | undefined;
  readonly #onLookup: ((outcome: CacheOutcome) => void) | undefined;

  constructor({ crosswalk, maxEntries, onLookup }: PatientLocatorOptions) {
    this.#crosswalk = crosswalk;
    this.#cache = maxEntries > 0 ? new LRUCache<string, string>({ max: maxEntries }) : undefined;
    this.#onLookup = onLookup;
  }

  /**
   * The locator of an ingest process: `ingest.crosswalk_cache.max_entries`, counted in
   * `cw_crosswalk_cache_lookups_total` on `registry`.
   */
  static fromConfig(deps: {
    config: Pick<Config, 'ingest'>;
    crosswalk: Crosswalk;
    registry: Registry;
  }): PatientLocator {
    const metrics = new IngestMetrics(deps.registry);
    return new PatientLocator({
      crosswalk: deps.crosswalk,
      maxEntries: deps.config.ingest.crosswalk_cache.max_entries,
      onLookup: (outcome) => metrics.countCacheLookup(outcome),
    });
  }

  /** Entries held now (tests, metrics). */
  get size(): number {
    return this.#cache?.size ?? 0;
  }

  /**
   * The patient of `localId`: from the cache (no round trip), else from its lookup entry (one
   * `HGET`). With `followMerges` (after a commit answered `retired`), through the merges to the
   * survivor, unverified and uncached, as `Crosswalk.findCurrent` reads it.
   */
  async locate(localId: string, { followMerges = false } = {}): Promise<LocatedPatient> {
    const crosswalk = this.#crosswalk;
    if (followMerges) {
      const current = await crosswalk.findCurrent(localId);
      if (current === undefined) return this.#newPatient(localId);
      return { kind: 'known', patientServiceId: current, cached: false };
    }
    // During a key rotation, under each key of the keyring (the sealing key's first).
    const lookupKeys = crosswalk.lookupKeysOf(localId);
    for (const lookupKey of lookupKeys) {
      const cached = this.#cache?.get(lookupKey);
      if (cached === undefined) continue;
      this.#onLookup?.('hit');
      return {
        kind: 'known',
        patientServiceId: cached,
        verify: { lookupKey, retiredKey: crosswalk.retiredKeyOf(cached) },
        cached: true,
      };
    }
    if (this.#cache !== undefined) this.#onLookup?.('miss');
    let lookupKey: string | undefined;
    let found: string | undefined;
    for (const key of lookupKeys) {
      found = await crosswalk.findByLookupKey(key);
      if (found === undefined) continue;
      lookupKey = key;
      break;
    }
    if (found === undefined || lookupKey === undefined) return this.#newPatient(localId);
    const retiredKey = crosswalk.retiredKeyOf(found);
    // A script's keys must share a slot: an entry left in another partition is read each time.
    if (prefixOf(lookupKey, 'xw') !== prefixOf(retiredKey, 'xwm')) {
      return this.locate(localId, { followMerges: true });
    }
    return {
      kind: 'known',
      patientServiceId: found,
      verify: { lookupKey, retiredKey },
      cached: false,
    };
  }

  #newPatient(localId: string): LocatedPatient {
    const plan = this.#crosswalk.plan(localId);
    return { kind: 'new', patientServiceId: plan.patientServiceId, plan };
  }

  /**
   * A commit with this location went through (it verified the entry, or created it): the local id
   * is remembered, or refreshed as recently used.
   */
  confirm(located: LocatedPatient): void {
    if (this.#cache === undefined) return;
    if (located.kind === 'new') {
      this.#cache.set(located.plan.forwardKey, located.patientServiceId);
    } else if (located.verify !== undefined && !located.cached) {
      this.#cache.set(located.verify.lookupKey, located.patientServiceId);
    }
  }

  /** A commit answered `stale`, `retired` or `conflict`: the entry (if any) is dropped. */
  forget(located: LocatedPatient): void {
    if (this.#cache === undefined) return;
    const key = located.kind === 'new' ? located.plan.forwardKey : located.verify?.lookupKey;
    if (key === undefined) return;
    if (located.kind === 'known' && located.cached) this.#onLookup?.('stale');
    this.#cache.delete(key);
  }
}
