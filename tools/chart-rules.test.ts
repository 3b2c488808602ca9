import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { promtoolPath } from '../test/integration/observability/support/promtool.ts';
import { CHART_RULES, PLAIN_RULES } from './promql-metrics.ts';
import { markdownAnchor } from './markdown-anchor.ts';

const CHART = new URL('../helm/concordance-worker/', import.meta.url);
const README = readFileSync(new URL('README.md', CHART), 'utf8');

interface Rule {
  alert?: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/**
 * The values.yaml paths that carry a `# --` description (the documented ones) and every leaf
 * path, from the file's text (indentation two spaces per level, as the file is written).
 */
function valuePaths(text: string): { documented: string[]; leaves: string[] } {
  const documented: string[] = [];
  const all: { path: string; leaf: boolean }[] = [];
  const stack: string[] = [];
  let described = false;
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) {
      if (/^\s*# -- /.test(line)) described = true;
      continue;
    }
    const match = /^(\s*)([A-Za-z_][\w.-]*):(.*)$/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 2;
    stack.splice(depth, stack.length, match[2] ?? '');
    const path = stack.join('.');
    if (described) documented.push(path);
    described = false;
    all.push({ path, leaf: (match[3] ?? '').trim() !== '' });
  }
  return { documented, leaves: all.filter((p) => p.leaf).map((p) => p.path) };
}

describe('the alert rules', () => {
  const source = readFileSync(CHART_RULES, 'utf8');
  const rules = (parseYaml(source) as { groups: { rules: Rule[] }[] }).groups.flatMap(
    (g) => g.rules,
  );

  it('ship byte for byte the same as the plain Prometheus rules file', () => {
    expect(readFileSync(PLAIN_RULES, 'utf8')).toBe(source);
  });

  it('are the alerts of the runbook, each with for, severity, summary, description and a runbook anchor that exists', () => {
    const headings = new Set(
      [...README.matchAll(/^### (.+)$/gm)].map((m) => markdownAnchor(m[1] ?? '')),
    );
    expect(rules.map((r) => r.alert)).toEqual([
      'ConcordanceWorkerDeadLettersRising',
      'ConcordanceWorkerOldestQueryWaitingTooLong',
      'ConcordanceWorkerPollsLate',
      'ConcordanceWorkerPollBacklog',
      'ConcordanceWorkerServiceErrors',
      'ConcordanceWorkerServiceRateLimited',
      'ConcordanceWorkerAuthPaused',
      'ConcordanceWorkerRedisUnreachable',
      'ConcordanceWorkerOutboundConsumerLagging',
      'ConcordanceWorkerPossibleDuplicateSubmissions',
      'ConcordanceWorkerUnmappedProblemCodesRising',
      'ConcordanceWorkerFeedSilent',
    ]);
    for (const rule of rules) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical', 'info'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toMatch(/\S/);
      expect(rule.annotations?.description, rule.alert).toMatch(/\S/);
      const runbook = rule.annotations?.runbook ?? '';
      expect(runbook, rule.alert).toBe(
        `helm/concordance-worker/README.md#${(rule.alert ?? '').toLowerCase()}`,
      );
      expect(headings.has(runbook.split('#')[1] ?? ''), runbook).toBe(true);
    }
  });

  it('pass promtool check rules (the plain file)', () => {
    const run = spawnSync(promtoolPath(), ['check', 'rules', PLAIN_RULES.pathname], {
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(run.status).toBe(0);
  });
});

describe('the chart README', () => {
  it('describes every value of values.yaml, and every value has a description', () => {
    const { documented, leaves } = valuePaths(readFileSync(new URL('values.yaml', CHART), 'utf8'));
    expect(documented.length).toBeGreaterThan(100);
    for (const path of documented) expect(README, path).toContain(`| \`${path}\``);
    // A leaf without its own description is inside a documented object (e.g. resources.requests).
    for (const leaf of leaves) {
      expect(
        documented.some((d) => leaf === d || leaf.startsWith(`${d}.`)),
        `${leaf} has no description`,
      ).toBe(true);
    }
  });
});
