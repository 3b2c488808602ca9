import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { FaultProfileSchema, type FaultProfile } from '../fault-profile.ts';

/** Reads a fault profile from a YAML or JSON file (YAML is a superset of JSON). */
export function loadFaultProfile(file: string): FaultProfile {
  const text = readFileSync(file, 'utf8');
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (err) {
    throw new Error(`${file} is neither YAML nor JSON: ${(err as Error).message.split('\n')[0]}`, {
      cause: err,
    });
  }
  const result = FaultProfileSchema.safeParse(raw ?? {});
  if (!result.success) {
    const problems = result.error.issues
      .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new Error(`${file} is not a valid fault profile: ${problems}`);
  }
  return result.data;
}
