import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { promtoolPath } from '../test/integration/observability/support/promtool.ts';
import { CHART_RULES, PLAIN_RULES } from './promql-metrics.ts';
import { markdownAnchor } from './markdown-anchor.ts';

const CHART = new URL('../helm/concordance-worker/', import.meta.url);
const README = readFileSync(new URL('README.md', CHART), 'utf8');
const OPERATIONS = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
const RULES_TESTS = new URL('rules/concordance-worker-rules.test.yaml', CHART);
/** The base every runbook_url of the source starts with; the chart replaces it (prometheusRule.runbookBaseUrl). */
const RUNBOOK_PLACEHOLDER = 'https://runbooks.invalid/concordance-worker/operations.md';

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

  it('are the alerts of the runbook, each with for, severity, summary, description and a runbook_url whose anchor exists', () => {
    const runbooks = OPERATIONS.slice(OPERATIONS.indexOf('\n## Alerts and runbooks\n'));
    const headings = new Set(
      [...runbooks.matchAll(/^### (.+)$/gm)].map((m) => markdownAnchor(m[1] ?? '')),
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
      'ConcordanceWorkerProcessDown',
      'ConcordanceWorkerRoleDown',
      'ConcordanceWorkerRoleAbsent',
      'ConcordanceWorkerQueriesFailing',
      'ConcordanceWorkerWebhookRetrying',
    ]);
    // One runbook section per alert, no more.
    expect(headings.size).toBe(rules.length);
    for (const rule of rules) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical', 'info'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toMatch(/\S/);
      expect(rule.annotations?.description, rule.alert).toMatch(/\S/);
      expect(Object.keys(rule.annotations ?? {}).sort(), rule.alert).toEqual([
        'description',
        'runbook_url',
        'summary',
      ]);
      const runbook = rule.annotations?.runbook_url ?? '';
      expect(runbook, rule.alert).toBe(
        `${RUNBOOK_PLACEHOLDER}#${(rule.alert ?? '').toLowerCase()}`,
      );
      expect(headings.has(runbook.split('#')[1] ?? ''), runbook).toBe(true);
    }
  });

  it('pass their promtool unit tests, which cover every alert added with the runbook URLs', () => {
    const run = spawnSync(promtoolPath(), ['test', 'rules', RULES_TESTS.pathname], {
      encoding: 'utf8',
    });
    expect(run.stdout + run.stderr).toContain('SUCCESS');
    expect(run.status).toBe(0);
    const tested = new Set(
      [...readFileSync(RULES_TESTS, 'utf8').matchAll(/^\s+alertname: (\w+)$/gm)].map((m) => m[1]),
    );
    for (const alert of [
      'ConcordanceWorkerProcessDown',
      'ConcordanceWorkerRoleDown',
      'ConcordanceWorkerRoleAbsent',
      'ConcordanceWorkerQueriesFailing',
      'ConcordanceWorkerWebhookRetrying',
    ])
      expect([...tested], alert).toContain(alert);
  });

  it('fail promtool test rules when an alert does not fire as its test expects', () => {
    // The unit tests can fail: with the failed-query threshold raised past the tests' 20 %, the
    // case that expects ConcordanceWorkerQueriesFailing finds no alert.
    const dir = mkdtempSync(join(tmpdir(), 'cw-rules-'));
    try {
      const source = readFileSync(CHART_RULES, 'utf8');
      const raised = source.replace(
        '/ sum by (namespace) (rate(cw_queries_finished_total[15m])) > 0.1',
        '/ sum by (namespace) (rate(cw_queries_finished_total[15m])) > 0.5',
      );
      expect(raised).not.toBe(source);
      writeFileSync(join(dir, 'concordance-worker-rules.yaml'), raised);
      writeFileSync(join(dir, 'rules.test.yaml'), readFileSync(RULES_TESTS, 'utf8'));
      const run = spawnSync(promtoolPath(), ['test', 'rules', join(dir, 'rules.test.yaml')], {
        encoding: 'utf8',
      });
      expect(run.status).toBe(1);
      expect(run.stdout + run.stderr).toContain('alertname: ConcordanceWorkerQueriesFailing');
    } finally {
      rmSync(dir, { recursive: true, force: true });
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
