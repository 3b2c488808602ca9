import type { PatientIdConfig, PatientIdRule } from '../../config/config-schema.ts';
import { component, rawField, repetitions, type Delimiters, type Segment } from './er7.ts';

/** One CX repetition: CX.1 id, CX.4 assigning authority (HD.1 namespace, HD.2 universal id), CX.5 type. */
interface CxIdentifier {
  id: string;
  namespace: string;
  universal: string;
  typeCode: string;
}

function identifiersOf(rawCx: string, d: Delimiters): CxIdentifier[] {
  return repetitions(rawCx, d)
    .map((rep) => ({
      id: component(rep, 1, d),
      namespace: component(rep, 4, d, 1),
      universal: component(rep, 4, d, 2),
      typeCode: component(rep, 5, d),
    }))
    .filter((cx) => cx.id !== '');
}

function matches(rule: PatientIdRule, cx: CxIdentifier): boolean {
  if (rule.any === true) return true;
  if (rule.type_codes !== undefined && !rule.type_codes.includes(cx.typeCode)) return false;
  if (
    rule.authorities !== undefined &&
    !rule.authorities.includes(cx.namespace) &&
    !rule.authorities.includes(cx.universal)
  ) {
    return false;
  }
  return true;
}

/**
 * The identity key of an identifier: `<authority>|<id>` when it names an assigning authority (its
 * namespace id, else its universal id) not listed in `unqualified_authorities`, else the id alone.
 * Equal numbers from two authorities therefore stay two patients, and an id without authority (or
 * from a listed one) keeps the key it had before issue 9. A `|` in the authority stays escaped
 * (`\F\`), so the key reads back unambiguously.
 */
export function identityKey(cx: CxIdentifier, config: PatientIdConfig): string {
  // `|` is ER7's field separator: an authority holding one (sent escaped, `\F\`) keeps it escaped.
  const authority = (cx.namespace || cx.universal).replaceAll('|', '\\F\\');
  if (authority === '') return cx.id;
  const unqualified = config.unqualified_authorities;
  if (
    unqualified.includes('*') ||
    unqualified.includes(cx.namespace) ||
    unqualified.includes(cx.universal)
  ) {
    return cx.id;
  }
  return `${authority}|${cx.id}`;
}

/** The first identifier of a CX field that a rule accepts, rules in order; undefined if none. */
export function firstByRules(
  rawCx: string,
  d: Delimiters,
  config: PatientIdConfig,
): CxIdentifier | undefined {
  const identifiers = identifiersOf(rawCx, d);
  for (const rule of config.rules) {
    const found = identifiers.find((cx) => matches(rule, cx));
    if (found !== undefined) return found;
  }
  return undefined;
}

const FALLBACK_FIELD: Readonly<Record<PatientIdConfig['fallback_fields'][number], number>> = {
  'PID-2': 2,
  'PID-4': 4,
};

/**
 * The patient's identity key from a PID segment: the rules on PID-3, then on each configured
 * fallback field (PID-2, PID-4 of v2.2-v2.3 feeds); undefined when nothing matches.
 */
export function patientKeyOfPid(
  pid: Segment,
  d: Delimiters,
  config: PatientIdConfig,
): string | undefined {
  for (const n of [3, ...config.fallback_fields.map((f) => FALLBACK_FIELD[f])]) {
    const found = firstByRules(rawField(pid, n), d, config);
    if (found !== undefined) return identityKey(found, config);
  }
  return undefined;
}

/**
 * The prior patient's identity key from an MRG segment (A18, A34, A40, A47): the rules on MRG-1
 * (prior patient identifier list), then MRG-4 (prior patient id, old versions) when PID-2 is a
 * fallback, then MRG-2 (prior alternate id) when PID-4 is.
 */
export function priorKeyOfMrg(
  mrg: Segment,
  d: Delimiters,
  config: PatientIdConfig,
): string | undefined {
  const fields = [
    1,
    ...(config.fallback_fields.includes('PID-2') ? [4] : []),
    ...(config.fallback_fields.includes('PID-4') ? [2] : []),
  ];
  for (const n of fields) {
    const found = firstByRules(rawField(mrg, n), d, config);
    if (found !== undefined) return identityKey(found, config);
  }
  return undefined;
}

/** A short description of the rules for an AE's ERR text (no patient data). */
export function describeRules(config: PatientIdConfig): string {
  const rules = config.rules.map((r) =>
    r.any === true
      ? 'any non-empty id'
      : [
          r.type_codes === undefined ? '' : `type ${r.type_codes.join('/')}`,
          r.authorities === undefined ? '' : `authority ${r.authorities.join('/')}`,
        ]
          .filter((t) => t !== '')
          .join(' from '),
  );
  return rules.join(', then ');
}
