/**
 * The preset that is not a CCSR category: Prevent, the service's healthy-behaviour
 * recommendations. It is a reserved preset name, written wherever a CCSR category goes (the
 * presets route `PUT /v1/patients/{id}/presets/prevent`, `presets.rules`, the presets hash, the
 * query engine's due sets, the result event's `ccsr_category`), so that it reuses every one of
 * them. Lower case, where every CCSR category is three capitals and three digits (`END002`), so
 * the two can never be mistaken for each other.
 */
export const PREVENT_PRESET = 'prevent';

/** True for the reserved Prevent preset name. */
export function isPreventPreset(name: string): boolean {
  return name === PREVENT_PRESET;
}
