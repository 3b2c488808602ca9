import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../config/config-error.ts';
import { loadConfig } from '../../config/load-config.ts';

describe('the fhir configuration section', () => {
  it('defaults to no FHIR server, the logical id and a 10 s timeout', () => {
    expect(loadConfig({ env: {} }).fhir).toEqual({
      base_url: null,
      patient_identifier_system: null,
      timeout_ms: 10000,
      rest_hooks: [],
    });
  });

  it('takes FHIR_BASE_URL and FHIR_TOKEN from the environment', () => {
    const config = loadConfig({
      env: { FHIR_BASE_URL: 'https://ehr.example.org/fhir', FHIR_TOKEN: 'tok-123' },
    });
    expect(config.fhir).toMatchObject({
      base_url: 'https://ehr.example.org/fhir',
      token: 'tok-123',
    });
  });

  it('refuses the token in a file (a secret) and a base URL that is not http(s)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cw-fhir-config-'));
    const file = join(dir, 'override.yaml');
    writeFileSync(file, 'fhir:\n  token: in-a-file\n');
    expect(() => loadConfig({ file, env: {} })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { FHIR_BASE_URL: 'ftp://ehr.example.org' } })).toThrow(
      ConfigError,
    );
  });
});
