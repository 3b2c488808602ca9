import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { roleProblems } from '../runtime/role-problems.ts';
import { ConfigError } from './config-error.ts';
import { configSlices } from './config-slices.ts';
import { loadConfig } from './load-config.ts';

const file = (text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-prevent-')), 'config.yaml');
  writeFileSync(path, text);
  return path;
};

const problems = (run: () => unknown) => {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => p.path);
    throw err;
  }
  return [];
};

const KEY = randomBytes(32).toString('base64');
const ON = 'prevent:\n  enabled: true\n';

describe('prevent.* configuration', () => {
  it('is off by default; PREVENT_ID_KEY comes from the environment only', () => {
    expect(loadConfig({ env: {} }).prevent).toEqual({ enabled: false, every_patient: false });
    expect(loadConfig({ env: { PREVENT_ID_KEY: KEY } }).prevent.id_key).toBe(KEY);
    expect(problems(() => loadConfig({ file: file(`${ON}  id_key: ${KEY}\n`), env: {} }))).toEqual([
      'prevent.id_key',
    ]);
  });

  it('refuses a weak or malformed key', () => {
    expect(problems(() => loadConfig({ env: { PREVENT_ID_KEY: 'change-me' } }))).toEqual([
      'prevent.id_key',
    ]);
    expect(
      problems(() =>
        loadConfig({ env: { PREVENT_ID_KEY: Buffer.alloc(32, 1).toString('base64') } }),
      ),
    ).toEqual(['prevent.id_key']);
  });

  it('refuses the prevent preset (a rule, every_patient) while Prevent is off', () => {
    const rule = 'presets:\n  rules:\n    - ccsr_category: prevent\n';
    expect(problems(() => loadConfig({ file: file(rule), env: {} }))).toEqual([
      'presets.rules.0.ccsr_category',
    ]);
    expect(
      problems(() => loadConfig({ file: file('prevent:\n  every_patient: true\n'), env: {} })),
    ).toEqual(['prevent.every_patient']);
    expect(problems(() => loadConfig({ file: file(`${rule}${ON}`), env: {} }))).toEqual([]);
    expect(
      problems(() =>
        loadConfig({ file: file('presets:\n  rules:\n    - ccsr_category: PREVENT\n'), env: {} }),
      ),
    ).toEqual(['presets.rules.0.ccsr_category']);
  });

  it('gives ingest the every_patient rule, listed with the others and only once', () => {
    const every = loadConfig({ file: file(`${ON}  every_patient: true\n`), env: {} });
    expect(configSlices(every).ingest.presets.rules).toEqual([{ ccsr_category: 'prevent' }]);
    expect(every.presets.rules).toEqual([]);
    const both = loadConfig({
      file: file(
        `${ON}  every_patient: true\npresets:\n  rules:\n    - { ccsr_category: prevent, when_changes: [Observation] }\n`,
      ),
      env: {},
    });
    expect(configSlices(both).ingest.presets.rules).toEqual([
      { ccsr_category: 'prevent', when_changes: ['Observation'] },
    ]);
  });

  it('makes PREVENT_ID_KEY a need of the workers, not of ingest, when Prevent is on', () => {
    const env = {
      CROSSWALK_KEY: randomBytes(32).toString('base64'),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
      SERVICE_API_KEY: randomBytes(20).toString('hex'),
      OUTBOUND_KEY: randomBytes(32).toString('base64'),
    };
    const on = file(`${ON}delivery:\n  outbound_queue: { enabled: true }\n`);
    const paths = (role: 'ingest' | 'work' | 'start', extra: Record<string, string> = {}) =>
      roleProblems(loadConfig({ file: on, env: { ...env, ...extra } }), role).map((p) => p.path);
    expect(paths('work')).toEqual(['prevent.id_key']);
    expect(paths('start')).toEqual(['prevent.id_key']);
    expect(paths('ingest')).toEqual([]);
    expect(paths('start', { PREVENT_ID_KEY: KEY })).toEqual([]);
  });
});
