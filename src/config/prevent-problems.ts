import { isPreventPreset } from '../ccsr/preset-names.ts';
import type { ConfigProblem } from './config-error.ts';
import type { Config } from './config-schema.ts';

/**
 * The `prevent` preset asked for (by rule, or for every patient) while Prevent is off: refused, so
 * that it is not silently ignored. `PREVENT_ID_KEY` is a matter for the worker role (see
 * `roleProblems`): ingest never needs it.
 */
export function preventProblems(config: Pick<Config, 'prevent' | 'presets'>): ConfigProblem[] {
  if (config.prevent.enabled) return [];
  const problems: ConfigProblem[] = [];
  const off = 'Prevent is off: set prevent.enabled (and PREVENT_ID_KEY for the workers)';
  if (config.prevent.every_patient) problems.push({ path: 'prevent.every_patient', message: off });
  config.presets.rules.forEach((rule, i) => {
    if (isPreventPreset(rule.ccsr_category)) {
      problems.push({ path: `presets.rules.${i}.ccsr_category`, message: off });
    }
  });
  return problems;
}
