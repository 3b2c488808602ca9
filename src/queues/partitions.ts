import { createHash, randomUUID } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { hashTagOf, MAX_PARTITIONS } from '../config/redis-partitioning.ts';

/** Redis Cluster's hash slots. */
export const CLUSTER_SLOTS = 16_384;

/** The Redis Cluster hash slot of a key (the function ioredis routes commands with). */
export function slotOf(key: string): number {
  return calculateSlot(key);
}

/**
 * Which of `count` partitions `text` falls in: the first four bytes of its SHA-256, big-endian,
 * modulo `count`. The same in every process and every release; `count` 1 is always 0.
 */
export function partitionIndex(text: string, count: number): number {
  if (count === 1) return 0;
  return createHash('sha256').update(text, 'utf8').digest().readUInt32BE(0) % count;
}

/** The circular distance between two slots. */
const slotDistance = (a: number, b: number) => {
  const d = Math.abs(a - b);
  return Math.min(d, CLUSTER_SLOTS - d);
};

/**
 * The key prefix of every partition. Partition 0 is `prefix` itself (so that one partition is
 * exactly the keys of an install without partitions); partition p >= 1 has the hash tag
 * `<tag>.p<p>` (or `<tag>.p<p>.<k>`, the smallest k that fits), chosen so that the partitions'
 * slots are spread evenly over the slot space: partition p's slot lies near the middle of the
 * p-th `count`-th of the slots after the one partition 0's slot is in. On a cluster whose masters
 * own equal slot ranges (what `redis-cli --cluster create` makes), `count` partitions on `count`
 * masters land one on each.
 */
export function partitionPrefixes(prefix: string, count: number): string[] {
  if (!Number.isInteger(count) || count < 1 || count > MAX_PARTITIONS) {
    throw new RangeError(`partitions must be an integer from 1 to ${MAX_PARTITIONS}`);
  }
  if (count === 1) return [prefix];
  const tag = hashTagOf(prefix);
  if (tag === undefined) {
    throw new RangeError('partitions need a prefix with a hash tag, e.g. {cw}');
  }
  const open = prefix.indexOf('{');
  const close = prefix.indexOf('}', open + 1);
  const withTag = (inner: string) => `${prefix.slice(0, open + 1)}${inner}${prefix.slice(close)}`;
  const width = CLUSTER_SLOTS / count;
  const first = Math.floor(slotOf(prefix) / width);
  const prefixes = [prefix];
  for (let p = 1; p < count; p++) {
    const centre = (((first + p) % count) + 0.5) * width;
    for (let k = 0; ; k++) {
      const candidate = withTag(k === 0 ? `${tag}.p${p}` : `${tag}.p${p}.${k}`);
      if (slotDistance(slotOf(candidate), centre) <= width / 4) {
        prefixes.push(candidate);
        break;
      }
      // A quarter of each share is accepted: 2 * count tries on average, never near this bound.
      if (k > 1_000_000) throw new Error('no partition hash tag found (unreachable)');
    }
  }
  return prefixes;
}

/**
 * Where a patient's keys live when `redis.partitions` > 1: every key of a patient (crosswalk
 * entry, record, presets, query state, due queries, deliveries) carries its partition's hash tag,
 * so that each Lua script stays in one slot, and each partition has its own due set and queues.
 * A patient's partition is {@link partitionIndex} of its `patient_service_id`; the crosswalk
 * entry that finds the service id from a local id lives in the partition of the local id's lookup
 * HMAC, and a new patient's service id is drawn so that both agree (see {@link drawPatientId}).
 * With one partition everything is under `prefix`, exactly as without partitions.
 */
export class Partitions {
  readonly count: number;
  /** The key prefix of each partition; `prefixes[0]` is the configured prefix. */
  readonly prefixes: readonly string[];

  constructor(prefix: string, count = 1) {
    this.prefixes = partitionPrefixes(prefix, count);
    this.count = count;
  }

  /** The partitions of `redis.prefix` and `redis.partitions`. */
  static of(redis: { prefix: string; partitions: number }): Partitions {
    return new Partitions(redis.prefix, redis.partitions);
  }

  /** The configured prefix (partition 0's). */
  get base(): string {
    return this.prefixes[0] as string;
  }

  /** The partition of a patient (by its service id). */
  indexOf(patientServiceId: string): number {
    return partitionIndex(patientServiceId, this.count);
  }

  /** The key prefix of a patient's partition. */
  prefixOf(patientServiceId: string): string {
    return this.prefixAt(this.indexOf(patientServiceId));
  }

  /** The key prefix of partition `index`. */
  prefixAt(index: number): string {
    const prefix = this.prefixes[index];
    if (prefix === undefined) throw new RangeError(`no partition ${index} of ${this.count}`);
    return prefix;
  }

  /** The partition of a crosswalk lookup (the HMAC of a local id). */
  indexOfLookup(lookup: string): number {
    return partitionIndex(lookup, this.count);
  }

  /**
   * A new random service id that falls in partition `index` (random UUIDs are drawn until one
   * does: `count` draws on average).
   */
  drawPatientId(index: number, draw: () => string = randomUUID): string {
    for (;;) {
      const id = draw();
      if (this.indexOf(id) === index) return id;
    }
  }
}

/** A prefix (one partition) or the partitions of a patient's keys: what the stores take. */
export type KeySpace = string | Partitions;

/** The prefix of a patient's keys in `space`. */
export function patientPrefix(space: KeySpace, patientServiceId: string): string {
  return typeof space === 'string' ? space : space.prefixOf(patientServiceId);
}

/** The prefix of what is not a patient's (partition 0, the configured prefix). */
export function basePrefix(space: KeySpace): string {
  return typeof space === 'string' ? space : space.base;
}

/** Every partition's prefix of `space`. */
export function allPrefixes(space: KeySpace): readonly string[] {
  return typeof space === 'string' ? [space] : space.prefixes;
}
