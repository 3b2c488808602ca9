import { canonicalSystem } from './problem-code-systems.ts';

/** `system|code` (system canonical, code trimmed) -> ICD-10-CM codes, for a flat code map. */
export type CodeMap = ReadonlyMap<string, readonly string[]>;

/** The key of a coding in a {@link CodeMap}: FHIR URI for known systems, codes trimmed. */
export function codeMapKey(system: string, code: string): string {
  return `${canonicalSystem(system)}|${code.trim()}`;
}

/** The ICD-10-CM codes of a coding, or undefined when the map does not hold it. */
export function lookupCodeMap(
  map: CodeMap,
  system: string,
  code: string,
): readonly string[] | undefined {
  return map.get(codeMapKey(system, code));
}
