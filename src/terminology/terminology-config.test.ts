import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.ts';

describe('terminology configuration', () => {
  it('defaults: every source in order, no files, no server, a week of cache', () => {
    const { terminology } = loadConfig({ env: {} });
    expect(terminology.sources).toEqual(['rf2_file', 'csv_file', 'server', 'embedded']);
    expect(terminology.rf2_file).toBeNull();
    expect(terminology.csv_file).toBeNull();
    expect(terminology.server).toMatchObject({
      base_url: null,
      method: 'GET',
      cache_ttl_s: 604800,
    });
  });

  it('TERMINOLOGY_TOKEN comes from the environment; a placeholder is refused', () => {
    const token = randomBytes(20).toString('base64url');
    expect(loadConfig({ env: { TERMINOLOGY_TOKEN: token } }).terminology.server.token).toBe(token);
    expect(() => loadConfig({ env: { TERMINOLOGY_TOKEN: 'changeme' } })).toThrow(
      /terminology\.server\.token/,
    );
  });

  it('refuses a source listed twice or an unknown one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cw-terminology-'));
    for (const sources of ['[embedded, embedded]', '[snomed_magic]']) {
      const file = join(dir, 'config.yaml');
      writeFileSync(file, `terminology:\n  sources: ${sources}\n`);
      expect(() => loadConfig({ env: {}, file })).toThrow(/terminology\.sources/);
    }
  });
});
