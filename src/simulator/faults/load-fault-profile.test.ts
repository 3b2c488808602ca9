import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadFaultProfile } from './load-fault-profile.ts';

const dir = mkdtempSync(join(tmpdir(), 'faults-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('loadFaultProfile', () => {
  it('reads YAML', () => {
    const path = file(
      'a.yaml',
      'latency: {min_ms: 0, max_ms: 10}\nroutes:\n  "POST /v1/concordance": {error_rate: 1, times: 2}\n',
    );
    expect(loadFaultProfile(path)).toEqual({
      latency: { min_ms: 0, max_ms: 10 },
      routes: { 'POST /v1/concordance': { error_rate: 1, times: 2 } },
    });
  });

  it('reads JSON', () => {
    expect(loadFaultProfile(file('b.json', '{"job_loss_rate": 0.5}'))).toEqual({
      job_loss_rate: 0.5,
    });
  });

  it('treats an empty file as no faults', () => {
    expect(loadFaultProfile(file('c.yaml', ''))).toEqual({});
  });

  it('names the file and the bad field', () => {
    const path = file('d.yaml', 'routes: {"*": {error_rate: 2}}');
    expect(() => loadFaultProfile(path)).toThrow(
      /d\.yaml is not a valid fault profile: routes\.\*\.error_rate/,
    );
  });

  it('reports text that is not YAML', () => {
    expect(() => loadFaultProfile(file('e.yaml', 'a: [1, 2'))).toThrow(
      /e\.yaml is neither YAML nor JSON/,
    );
  });
});
