import type { AssembledPatient } from '../interface/assembled-patient.ts';

/** The payload still holds the patient's local identifier: it is refused, not sent. */
export class IdentifierLeakError extends Error {
  static readonly code = 'ERR_IDENTIFIER_LEAK';
  readonly code = IdentifierLeakError.code;

  constructor() {
    super('the assembled record still contains the local patient identifier; not sent');
    this.name = 'IdentifierLeakError';
  }
}

export interface PrepareOptions {
  /** The hospital's own patient id: it must not appear anywhere in the payload. */
  localId: string;
  /** Keys removed wherever they appear (config `privacy.identifying_fields`). */
  identifyingFields: readonly string[];
  /** Replaces a `fhir_id` by an opaque id that maps back (see Crosswalk.opaqueFhirId). */
  opaqueFhirId(fhirId: string): Promise<string>;
}

function strip(value: unknown, drop: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((item) => strip(item, drop));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !drop.has(key.toLowerCase()))
      .map(([key, item]) => [key, strip(item, drop)]),
  );
}

/** True when `value` holds the id: inside any string (ids of 4+ characters), else equal to it. */
function contains(value: unknown, id: string): boolean {
  if (typeof value === 'string') {
    const text = value.toLowerCase();
    return id.length >= 4 ? text.includes(id) : text === id;
  }
  if (typeof value === 'number') return String(value) === id;
  if (Array.isArray(value)) return value.some((item) => contains(item, id));
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).some(([key, item]) => contains(key, id) || contains(item, id));
  }
  return false;
}

/**
 * The record as it may leave the hospital: identifying keys removed, FHIR references made
 * opaque, and a last check that the local patient id is nowhere in it.
 */
export async function prepareForService(
  record: AssembledPatient,
  options: PrepareOptions,
): Promise<AssembledPatient> {
  const drop = new Set(options.identifyingFields.map((field) => field.toLowerCase()));
  const stripped = strip(record, drop) as AssembledPatient;
  const nodes = await Promise.all(
    stripped.nodes.map(async (node) =>
      node.fhir_id === undefined
        ? node
        : { ...node, fhir_id: await options.opaqueFhirId(node.fhir_id) },
    ),
  );
  const prepared = { ...stripped, nodes };
  if (contains(prepared, options.localId.trim().toLowerCase())) throw new IdentifierLeakError();
  return prepared;
}
