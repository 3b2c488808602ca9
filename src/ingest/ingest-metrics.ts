import type { Counter, Registry } from 'prom-client';
import { registryCounter } from '../observability/registry-counter.ts';

/** What became of a record update. */
export type IngestOutcome = 'accepted' | 'duplicate' | 'rejected' | 'unavailable';

/** Distinct `source` label values kept before the rest are counted as `other`. */
export const MAX_SOURCE_LABELS = 50;

const SOURCE_LABEL = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The ingest app's counters. The `source` label is the sender's free text, so it is bounded: only
 * plain names, at most {@link MAX_SOURCE_LABELS} of them, else `other` (`none` when absent), lest a
 * sender blow up the metric's cardinality.
 */
export class IngestMetrics {
  readonly #events: Counter<'source' | 'outcome'>;
  readonly #queries: Counter<'kind'>;
  readonly #unchanged: Counter;
  readonly #stored: Counter;
  readonly #cache: Counter<'outcome'>;
  readonly #sources = new Set<string>();

  constructor(registry: Registry) {
    this.#events = registryCounter(
      registry,
      'cw_ingest_events_total',
      'Record updates received, by sender-given source and outcome (accepted, duplicate, rejected, unavailable).',
      ['source', 'outcome'],
    );
    this.#queries = registryCounter(
      registry,
      'cw_queries_enqueued_total',
      'Concordance queries scheduled by record updates: new queries, or updates coalesced into an open one.',
      ['kind'],
    );
    this.#unchanged = registryCounter(
      registry,
      'cw_updates_unchanged_total',
      'Record updates that left the record as it was and opened no query (its queries already ran).',
    );
    this.#stored = registryCounter(
      registry,
      'cw_record_updates_stored_total',
      'Record updates stored in Redis, from every feed (JSON, HL7 v2, FHIR), unchanged ones included: a flat rate means the feeds went silent.',
    );
    this.#cache = registryCounter(
      registry,
      'cw_crosswalk_cache_lookups_total',
      "Patients of updates looked for in the ingest process's crosswalk cache: hit (no Redis lookup), miss, or stale (a cached entry the commit found outdated: purged, merged, re-created).",
      ['outcome'],
    );
  }

  #sourceLabel(source: unknown): string {
    if (source === undefined || source === '') return 'none';
    if (typeof source !== 'string' || !SOURCE_LABEL.test(source)) return 'other';
    if (this.#sources.has(source)) return source;
    if (this.#sources.size >= MAX_SOURCE_LABELS) return 'other';
    this.#sources.add(source);
    return source;
  }

  countEvent(source: unknown, outcome: IngestOutcome): void {
    this.#events.inc({ source: this.#sourceLabel(source), outcome });
  }

  countUnchanged(): void {
    this.#unchanged.inc();
  }

  countStored(): void {
    this.#stored.inc();
  }

  countCacheLookup(outcome: 'hit' | 'miss' | 'stale'): void {
    this.#cache.inc({ outcome });
  }

  countQuery(coalesced: boolean): void {
    this.#queries.inc({ kind: coalesced ? 'coalesced' : 'new' });
  }
}
