/**
 * A preset for every patient (`presets.rules` of the configuration). The configuration's
 * `PresetRule` has this shape; it is restated here so that the domain does not depend on config.
 */
export interface PresetRule {
  ccsr_category: string;
  /** Only updates whose `changes` name one of these kinds of data (compared case-insensitively). */
  when_changes?: readonly string[];
}

/**
 * The categories the rules ask for on an update that changed `changes` (kinds of data such as
 * `Observation`). A rule without `when_changes` always applies; one with it applies only when the
 * update names one of its kinds. An update that names no kinds triggers only unconditional rules,
 * because nothing tells us it touched the data the rule waits for. Deduplicated, in rule order.
 */
export function categoriesFromRules(
  rules: readonly PresetRule[],
  changes: readonly string[] = [],
): string[] {
  const changed = new Set(changes.map((kind) => kind.toLowerCase()));
  const out = new Set<string>();
  for (const rule of rules) {
    const applies =
      rule.when_changes === undefined ||
      rule.when_changes.some((kind) => changed.has(kind.toLowerCase()));
    if (applies) out.add(rule.ccsr_category);
  }
  return [...out];
}
