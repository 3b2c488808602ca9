import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const version = (JSON.parse(read('package.json')) as { version: string }).version;

describe('the release', () => {
  it("names one version in package.json, the chart's appVersion and the CHANGELOG's newest entry", () => {
    const chart = parse(read('helm/concordance-worker/Chart.yaml')) as {
      version: string;
      appVersion: string;
    };
    expect(chart.appVersion).toBe(version);
    expect(chart.version).toBe(version);
    const newest = /^## \[(\d+\.\d+\.\d+)\] — \d{4}-\d{2}-\d{2}$/m.exec(read('CHANGELOG.md'));
    expect(newest?.[1]).toBe(version);
  });
});
