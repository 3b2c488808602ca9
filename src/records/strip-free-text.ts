import type {
  AssembleEdge,
  AssembleNode,
  AssembledPatient,
  Coding,
  Demographics,
} from '../interface/assembled-patient.ts';
import { canonicalDisplay } from './canonical-display.ts';
import { DEMOGRAPHIC_TERMS } from './demographic-terms.ts';
import { shortValue } from './short-value.ts';

/**
 * What was taken out of a record before sending, by kind:
 * - `display`: a coding's display text (replaced by the canonical name or dropped) and
 *   `service_preferred_name`;
 * - `note`: notes and comments, wherever they were (`note`, `notes`, `comment`, `annotation`…);
 * - `narrative`: narrative text (`text`, FHIR `text.div`, `narrative`, `description`…);
 * - `metadata`: a `metadata` key not on the allow list, or an allowed key whose value is not a
 *   number, a boolean or a short coded string;
 * - `field`: any other field the AssembledPatient does not document, or a documented one whose
 *   value reads as free text (`relationship_type`, `gender`, `race`, `service_id`).
 */
export const FREE_TEXT_KINDS = ['display', 'note', 'narrative', 'metadata', 'field'] as const;
export type FreeTextKind = (typeof FREE_TEXT_KINDS)[number];

export interface FreeTextPolicy {
  /** `metadata` keys that may be sent (config `privacy.metadata_allowed_keys`); exact match. */
  metadataAllowedKeys: readonly string[];
  /** Keys never sent (config `privacy.identifying_fields`), compared case-insensitively. */
  identifyingFields: readonly string[];
}

export interface StrippedRecord {
  record: AssembledPatient;
  /** How many of each kind were removed (a replaced display counts as removed). */
  removed: Record<FreeTextKind, number>;
}

const NOTE_KEYS: ReadonlySet<string> = new Set([
  'note',
  'notes',
  'comment',
  'comments',
  'annotation',
  'annotations',
  'remark',
  'remarks',
  'nte',
]);

const NARRATIVE_KEYS: ReadonlySet<string> = new Set([
  'text',
  'div',
  'narrative',
  'description',
  'summary',
  'title',
  'free_text',
  'freetext',
]);

/** An id-like value: no spaces, at most 128 characters. */
const TOKEN = /^[A-Za-z0-9._:/|#-]{1,128}$/;

/** The AssembledPatient as the worker sends it, field by field; nothing else leaves. */
class Stripper {
  readonly removed: Record<FreeTextKind, number> = {
    display: 0,
    note: 0,
    narrative: 0,
    metadata: 0,
    field: 0,
  };
  readonly #allowed: ReadonlySet<string>;
  readonly #identifying: ReadonlySet<string>;

  constructor(policy: FreeTextPolicy) {
    this.#allowed = new Set(policy.metadataAllowedKeys);
    this.#identifying = new Set(policy.identifyingFields.map((field) => field.toLowerCase()));
  }

  /** Counts every key of `value` not in `known`, by what its name says it is. */
  #countUnknown(value: object, known: readonly string[], fallback: FreeTextKind): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) this.removed[this.#kindOf(key, fallback)]++;
    }
  }

  #kindOf(key: string, fallback: FreeTextKind): FreeTextKind {
    const name = key.toLowerCase();
    if (NOTE_KEYS.has(name)) return 'note';
    if (NARRATIVE_KEYS.has(name)) return 'narrative';
    return fallback;
  }

  /** A short coded string, else undefined (counted as `kind` when there was a value). */
  #short(value: unknown, kind: FreeTextKind): string | undefined {
    if (value === undefined) return undefined;
    const kept = typeof value === 'string' ? shortValue(value) : undefined;
    if (kept === undefined) this.removed[kind]++;
    return kept;
  }

  record(record: AssembledPatient): AssembledPatient {
    this.#countUnknown(record, ['nodes', 'relationships', 'demographics'], 'field');
    return {
      nodes: record.nodes.map((node) => this.#node(node)),
      relationships: record.relationships.map((edge) => this.#edge(edge)),
      demographics: this.#demographics(record.demographics),
    };
  }

  #node(node: AssembleNode): AssembleNode {
    const known = ['id', 'node_type', 'notable', 'fhir_id', 'service_id', 'coding', 'metadata'];
    this.#countUnknown(node, [...known, 'service_preferred_name'], 'field');
    if (node.service_preferred_name !== undefined) this.removed.display++;
    const out: AssembleNode = {
      id: node.id,
      node_type: node.node_type,
      notable: node.notable,
      coding: node.coding.map((coding) => this.#coding(coding)),
    };
    if (node.fhir_id !== undefined) out.fhir_id = node.fhir_id;
    if (node.service_id !== undefined) {
      if (TOKEN.test(node.service_id)) out.service_id = node.service_id;
      else this.removed.field++;
    }
    const metadata = node.metadata === undefined ? undefined : this.#metadata(node.metadata);
    if (metadata !== undefined) out.metadata = metadata;
    return out;
  }

  #coding(coding: Coding): Coding {
    this.#countUnknown(coding, ['system', 'code', 'display'], 'field');
    const canonical = canonicalDisplay(coding.system, coding.code);
    if (coding.display !== undefined && coding.display !== canonical) this.removed.display++;
    return canonical === undefined
      ? { system: coding.system, code: coding.code }
      : { system: coding.system, code: coding.code, display: canonical };
  }

  /** Allowed keys with scalar values only; never walks into a nested value. */
  #metadata(metadata: Record<string, unknown>): Record<string, unknown> | undefined {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(metadata)) {
      if (!this.#allowed.has(key) || this.#identifying.has(key.toLowerCase())) {
        this.removed[this.#kindOf(key, 'metadata')]++;
        continue;
      }
      if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) {
        out[key] = value;
        continue;
      }
      const kept = this.#short(value, 'metadata');
      if (kept !== undefined) out[key] = kept;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }

  #edge(edge: AssembleEdge): AssembleEdge {
    this.#countUnknown(edge, ['source_id', 'target_id', 'relationship_type'], 'field');
    const out: AssembleEdge = { source_id: edge.source_id, target_id: edge.target_id };
    const type = this.#short(edge.relationship_type, 'field');
    if (type !== undefined) out.relationship_type = type;
    return out;
  }

  /** A term of the fixed demographic vocabulary (any length), else a short coded value. */
  #demographic(value: string | undefined): string | undefined {
    if (value !== undefined && DEMOGRAPHIC_TERMS.has(value.trim().toLowerCase())) {
      return value.trim();
    }
    return this.#short(value, 'field');
  }

  #demographics(demographics: Demographics): Demographics {
    this.#countUnknown(demographics, ['age', 'gender', 'race'], 'field');
    const out: Demographics = { age: demographics.age };
    const gender = this.#demographic(demographics.gender);
    if (gender !== undefined) out.gender = gender;
    const race = this.#demographic(demographics.race);
    if (race !== undefined) out.race = race;
    return out;
  }
}

/**
 * The record with no free text left: only the fields the AssembledPatient documents, each coding's
 * display replaced by its canonical name where the shipped tables have one (ICD-10-CM, CCSR) and
 * dropped otherwise, `service_preferred_name` dropped, `metadata` reduced to the allow list with
 * scalar values (numbers, booleans, short coded strings: see `shortValue`), identifying keys
 * removed. Notes, narrative and unknown fields are removed silently and counted in `removed`.
 *
 * Walks only the record's fixed structure and never recurses into a nested value, so a record of
 * any depth costs no call stack. Pure: `record` is not changed.
 */
export function stripFreeText(record: AssembledPatient, policy: FreeTextPolicy): StrippedRecord {
  const stripper = new Stripper(policy);
  return { record: stripper.record(record), removed: stripper.removed };
}
