import { allPrefixes, type KeySpace } from '../queues/partitions.ts';
import { globLiteral, scanEach, type RedisClient } from '../queues/redis-client.ts';
import type { Crosswalk } from './crosswalk.ts';

/** One probable duplicate: a qualified key and the bare key of the same id. PHI. */
export interface DuplicatePair {
  /** `<authority>|<id>`, as HL7 v2 keys an id of an authority not keyed alone. */
  qualified: string;
  /** `<id>`: the same id keyed alone (HL7 v2 unqualified, FHIR identifier, JSON). */
  bare: string;
}

/** What {@link findProbableDuplicates} found: counts and authorities, never ids. */
export interface DuplicateCount {
  /** Patients read (crosswalk entries; those merged into another are left out). */
  patients: number;
  /** Qualified keys whose id alone is also a patient. */
  probable_duplicates: number;
  /** {@link probable_duplicates} by assigning authority (a configuration value, not PHI). */
  by_authority: Record<string, number>;
  /** Entries the crosswalk keys in force cannot open (left out). */
  unreadable: number;
}

export interface ProbableDuplicatesOptions {
  redis: RedisClient;
  /** The crosswalk's key space (`Partitions.of(config.redis)`). */
  prefix: KeySpace;
  crosswalk: Crosswalk;
}

/** The `<authority>|<id>` form of a key (the authority never holds `|`: it stays escaped). */
function split(key: string): { authority: string; id: string } | undefined {
  const bar = key.indexOf('|');
  if (bar <= 0 || bar === key.length - 1) return undefined;
  return { authority: key.slice(0, bar), id: key.slice(bar + 1) };
}

/**
 * Patients that are probably one person under two keys: `<authority>|<id>` (an HL7 v2 id whose
 * authority is not keyed alone) beside `<id>` (the same id from FHIR, JSON, or HL7 v2 keyed alone),
 * the trap `identity.patient_key.hospital_mrn` closes. The local ids are read from the
 * crosswalk's sealed copies (every partition, by SCAN) and opened with the crosswalk keys; a
 * patient merged into another is not counted. Reads only.
 */
export async function findProbableDuplicates(
  options: ProbableDuplicatesOptions,
): Promise<{ count: DuplicateCount; pairs: DuplicatePair[] }> {
  const { redis, crosswalk } = options;
  const localIds = new Set<string>();
  let unreadable = 0;
  for (const prefix of allPrefixes(options.prefix)) {
    const head = `${prefix}:xwr:`;
    for await (const keys of scanEach(redis, `${globLiteral(head)}*`, { type: 'string' })) {
      for (const key of keys) {
        const psid = key.slice(head.length);
        const [sealed, survivor] = await Promise.all([
          redis.get(key),
          redis.exists(crosswalk.retiredKeyOf(psid)),
        ]);
        if (survivor === 1) continue;
        try {
          const localId = crosswalk.openLocalId(psid, sealed);
          if (localId !== undefined) localIds.add(localId);
        } catch {
          unreadable += 1;
        }
      }
    }
  }
  const pairs: DuplicatePair[] = [];
  const byAuthority: Record<string, number> = {};
  for (const key of localIds) {
    const parts = split(key);
    if (parts === undefined || !localIds.has(parts.id)) continue;
    pairs.push({ qualified: key, bare: parts.id });
    byAuthority[parts.authority] = (byAuthority[parts.authority] ?? 0) + 1;
  }
  return {
    count: {
      patients: localIds.size,
      probable_duplicates: pairs.length,
      by_authority: byAuthority,
      unreadable,
    },
    pairs,
  };
}
