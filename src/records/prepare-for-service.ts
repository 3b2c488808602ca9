import type { AssembledPatient } from '../interface/assembled-patient.ts';
import { DEMOGRAPHIC_TERMS } from './demographic-terms.ts';
import { FREE_TEXT_KINDS, stripFreeText, type FreeTextKind } from './strip-free-text.ts';
import { ConcordanceError } from '../errors/concordance-error.ts';

/**
 * The payload still holds the patient's local identifier or another of the patient's known
 * identifiers: it is refused, not sent. The message never contains the value found.
 */
export class IdentifierLeakError extends ConcordanceError {
  static readonly code = 'ERR_IDENTIFIER_LEAK';
  readonly code = IdentifierLeakError.code;

  constructor(which: 'local id' | 'known identifier' = 'local id') {
    super(
      which === 'local id'
        ? 'the assembled record still contains the local patient identifier; not sent'
        : 'the assembled record contains one of the patient identifiers; not sent',
    );
    this.name = 'IdentifierLeakError';
  }
}

export interface PrepareOptions {
  /** The hospital's own patient id: it must not appear anywhere in the payload. */
  localId: string;
  /** Keys removed wherever they appear (config `privacy.identifying_fields`). */
  identifyingFields: readonly string[];
  /** `metadata` keys that may be sent (config `privacy.metadata_allowed_keys`); others are removed. */
  metadataAllowedKeys: readonly string[];
  /** Replaces a `fhir_id` by an opaque id that maps back (see Crosswalk.opaqueFhirId). */
  opaqueFhirId(fhirId: string): Promise<string>;
  /**
   * Further strings that must not appear (see `knownIdentifiers`): names, identifiers, birth date
   * forms, phones, emails, address parts. Matched by the same rules as the local id.
   */
  knownIdentifiers?: readonly string[];
  /**
   * Told, once per kind and payload, how many pieces of free text were removed (for the metric
   * `cw_free_text_removed_total{kind}`); not called for a kind with none. Never given the text.
   */
  onRemoved?: (kind: FreeTextKind, count: number) => void;
}

/** Every string (keys included) and number of the payload, lower-cased. */
interface PayloadText {
  strings: string[];
  numbers: string[];
}

/**
 * A coding's display once stripped: the canonical name from the shipped tables, fixed by the
 * code, so it cannot carry anything of the patient (and a surname such as Major or White must not
 * refuse `Major depressive disorder`).
 */
function isCanonicalDisplay(path: readonly string[]): boolean {
  return path.length === 5 && path[2] === 'coding' && path[4] === 'display';
}

/**
 * Strings of a payload the last check passes over (by their path and lower-cased text): they
 * cannot carry anything of the patient, and a name such as White must not refuse them.
 */
export type ExemptText = (path: readonly string[], text: string) => boolean;

/** The AssembledPatient's exemptions: canonical displays, and gender and race terms. */
const assembledExempt: ExemptText = (path, text) =>
  isCanonicalDisplay(path) ||
  (path.length === 2 &&
    path[0] === 'demographics' &&
    (path[1] === 'gender' || path[1] === 'race') &&
    DEMOGRAPHIC_TERMS.has(text));

/**
 * Collects a payload's text. It recurses over the payload's own structure, which the builders
 * keep shallow (the stripped AssembledPatient, the Prevent objects).
 */
function collect(
  value: unknown,
  out: PayloadText,
  path: readonly string[],
  exempt: ExemptText,
): void {
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase();
    if (!exempt(path, text)) out.strings.push(text);
  } else if (typeof value === 'number' || typeof value === 'bigint') {
    out.numbers.push(String(value));
  } else if (Array.isArray(value)) {
    for (const item of value) collect(item, out, [...path, '[]'], exempt);
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      out.strings.push(key.toLowerCase());
      collect(item, out, [...path, key], exempt);
    }
  }
}

/** `id` stands alone in `text`: no letter or digit beside it, nor `-`/`.` then a digit (`4548-4`). */
function standsAlone(text: string, id: string): boolean {
  const alnum = /[a-z0-9]/;
  const digit = /[0-9]/;
  for (let at = text.indexOf(id); at !== -1; at = text.indexOf(id, at + 1)) {
    const before = text[at - 1] ?? '';
    const beforeBefore = text[at - 2] ?? '';
    const after = text[at + id.length] ?? '';
    const afterAfter = text[at + id.length + 1] ?? '';
    if (alnum.test(before) || alnum.test(after)) continue;
    if ((before === '-' || before === '.') && digit.test(beforeBefore)) continue;
    if ((after === '-' || after === '.') && digit.test(afterAfter)) continue;
    return true;
  }
  return false;
}

/**
 * True when the payload holds `id` (trimmed, lower-cased). The rules keep codes and numbers from
 * colliding trivially with short numeric ids, at the price of missing some run-together forms:
 * - under 4 characters: only as a whole value (a string, a key, or a number's decimal form);
 * - 4 to 6 digits: a number equal to it, or standing alone in a string or key (not inside a longer
 *   number, a code such as LOINC `4548-4` or ICD `Z8546`, nor glued to letters such as `MRN4548`);
 * - 7+ digits (phones, SSNs, long MRNs, YYYYMMDD): inside the digits of any string, key or number,
 *   whatever the punctuation (`(555) 123-4567` holds `5551234567`);
 * - anything else: inside any string or key; a number equal to it.
 */
function holds(payload: PayloadText, id: string): boolean {
  if (id === '') return false;
  if (id.length < 4) {
    return payload.strings.includes(id) || payload.numbers.includes(id);
  }
  if (/^\d+$/.test(id)) {
    if (id.length < 7) {
      return payload.numbers.includes(id) || payload.strings.some((s) => standsAlone(s, id));
    }
    const digitsOnly = (s: string) => s.replace(/\D/g, '');
    return [...payload.strings, ...payload.numbers].some((s) => digitsOnly(s).includes(id));
  }
  return payload.numbers.includes(id) || payload.strings.some((s) => s.includes(id));
}

/**
 * The record as it may leave the hospital: no free text (see `stripFreeText`: displays replaced
 * by canonical names or dropped, notes, narrative, undocumented fields and metadata off the allow
 * list removed and counted through `onRemoved`), identifying keys removed, FHIR references made
 * opaque, and a last check that neither the local patient id nor any of `knownIdentifiers` is in
 * what is left. A refusal is safe (nothing leaks) but costs the patient's queries: callers must
 * log the `IdentifierLeakError` (its code and message, which never hold the value).
 */
export async function prepareForService(
  record: AssembledPatient,
  options: PrepareOptions,
): Promise<AssembledPatient> {
  const { record: stripped, removed } = stripFreeText(record, {
    metadataAllowedKeys: options.metadataAllowedKeys,
    identifyingFields: options.identifyingFields,
  });
  const nodes = await Promise.all(
    stripped.nodes.map(async (node) =>
      node.fhir_id === undefined
        ? node
        : { ...node, fhir_id: await options.opaqueFhirId(node.fhir_id) },
    ),
  );
  const prepared = { ...stripped, nodes };
  assertNoIdentifiers(prepared, options, assembledExempt);
  for (const kind of FREE_TEXT_KINDS) {
    if (removed[kind] > 0) options.onRemoved?.(kind, removed[kind]);
  }
  return prepared;
}

/**
 * The last check before anything leaves: throws an {@link IdentifierLeakError} when `payload`
 * holds the local patient id or one of `knownIdentifiers` (see `holds` for how they are matched),
 * never naming the value found. Strings `exempt` names are passed over.
 */
export function assertNoIdentifiers(
  payload: unknown,
  options: Pick<PrepareOptions, 'localId' | 'knownIdentifiers'>,
  exempt: ExemptText = () => false,
): void {
  const text: PayloadText = { strings: [], numbers: [] };
  collect(payload, text, [], exempt);
  if (holds(text, options.localId.trim().toLowerCase())) throw new IdentifierLeakError();
  for (const id of options.knownIdentifiers ?? []) {
    if (holds(text, id.trim().toLowerCase())) throw new IdentifierLeakError('known identifier');
  }
}
