/**
 * The metrics a PromQL expression reads, found with Prometheus' own PromQL grammar
 * (`@prometheus-io/lezer-promql`), and the expressions of the Grafana dashboard and the alert
 * rules. Used by the test that checks every metric they name is served
 * (test/integration/observability/dashboard-metrics.test.ts) and by tools/chart-rules.test.ts.
 */
import { readFileSync } from 'node:fs';
import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** One vector selector of an expression. */
export interface SelectorUse {
  /** The metric name as written (a histogram's `_bucket` series included). */
  metric: string;
  /** Label names of its matchers (`{state="waiting"}` gives `state`). */
  labels: string[];
  /** The function it is the argument of (`rate`, `increase`, ...), if any. */
  func?: string;
}

/** Grafana's interval variables, which are not PromQL, replaced by a duration to parse. */
const GRAFANA_INTERVALS =
  /\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}/g;

/** The vector selectors of `expr`; throws on a syntax error, with its position. */
export function selectorsOf(expr: string): SelectorUse[] {
  const text = expr.replace(GRAFANA_INTERVALS, '5m');
  const tree = parser.parse(text);
  const uses: SelectorUse[] = [];
  const cursor = tree.cursor();
  do {
    if (cursor.type.isError) {
      throw new Error(`PromQL syntax error at ${cursor.from} in: ${expr}`);
    }
    if (cursor.name !== 'VectorSelector') continue;
    const node = cursor.node;
    const metric = node.getChild('Identifier');
    if (metric === null) throw new Error(`a selector without a metric name in: ${expr}`);
    const labels: string[] = [];
    const matchers = node.getChild('LabelMatchers');
    for (const matcher of matchers?.getChildren('UnquotedLabelMatcher') ?? []) {
      const name = matcher.getChild('LabelName');
      if (name !== null) labels.push(text.slice(name.from, name.to));
    }
    // VectorSelector [-> MatrixSelector] -> FunctionCallBody -> FunctionCall.
    let parent = node.parent;
    if (parent?.name === 'MatrixSelector') parent = parent.parent;
    let func: string | undefined;
    if (parent?.name === 'FunctionCallBody' && parent.parent?.name === 'FunctionCall') {
      const id = parent.parent.getChild('FunctionIdentifier');
      if (id !== null) func = text.slice(id.from, id.to);
    }
    uses.push({ metric: text.slice(metric.from, metric.to), labels, ...(func ? { func } : {}) });
  } while (cursor.next());
  return uses;
}

const Dashboard = z.object({
  panels: z.array(
    z.object({
      title: z.string(),
      type: z.string(),
      targets: z.array(z.object({ expr: z.string().min(1) })).optional(),
    }),
  ),
  templating: z
    .object({
      list: z.array(z.object({ name: z.string(), query: z.unknown().optional() })),
    })
    .optional(),
});

/** An expression with where it comes from (a panel title, an alert name). */
export interface SourcedExpr {
  source: string;
  expr: string;
}

/** Every PromQL expression of a Grafana dashboard (panel targets and `label_values` variables). */
export function dashboardExprs(json: string): SourcedExpr[] {
  const dashboard = Dashboard.parse(JSON.parse(json));
  const out: SourcedExpr[] = [];
  for (const panel of dashboard.panels) {
    if (panel.type !== 'row' && (panel.targets ?? []).length === 0) {
      throw new Error(`panel "${panel.title}" has no query`);
    }
    for (const target of panel.targets ?? [])
      out.push({ source: `panel "${panel.title}"`, expr: target.expr });
  }
  for (const variable of dashboard.templating?.list ?? []) {
    const query = variable.query as { query?: unknown } | string | undefined;
    const text = typeof query === 'string' ? query : query?.query;
    const match = typeof text === 'string' ? /^label_values\((\w+),\s*\w+\)$/.exec(text) : null;
    if (match?.[1] !== undefined) out.push({ source: `variable ${variable.name}`, expr: match[1] });
  }
  return out;
}

const Rules = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      rules: z.array(
        z.object({ alert: z.string().optional(), record: z.string().optional(), expr: z.string() }),
      ),
    }),
  ),
});

/** Every expression of a Prometheus rules file. */
export function ruleExprs(yamlText: string): SourcedExpr[] {
  const rules = Rules.parse(parseYaml(yamlText));
  return rules.groups.flatMap((group) =>
    group.rules.map((rule) => ({
      source: `rule ${rule.alert ?? rule.record ?? '?'}`,
      expr: rule.expr,
    })),
  );
}

/** The chart's dashboard and rules (the one source of both rules files). */
export const CHART_DASHBOARD = new URL(
  '../helm/concordance-worker/dashboards/concordance-worker.json',
  import.meta.url,
);
export const CHART_RULES = new URL(
  '../helm/concordance-worker/rules/concordance-worker-rules.yaml',
  import.meta.url,
);
export const PLAIN_RULES = new URL(
  '../deploy/prometheus/concordance-worker-rules.yaml',
  import.meta.url,
);

/** Every expression of the shipped dashboard and alert rules. */
export function shippedExprs(): SourcedExpr[] {
  return [
    ...dashboardExprs(readFileSync(CHART_DASHBOARD, 'utf8')),
    ...ruleExprs(readFileSync(CHART_RULES, 'utf8')),
  ];
}

/** A metric family as a scrape shows it (`# TYPE` line). */
export interface Family {
  type: string;
  /** Label names seen on its samples (empty when it has none yet). */
  labels: Set<string>;
  samples: number;
}

const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'] as const;

/**
 * The family a selector's metric belongs to: the name itself, or for `_bucket`/`_sum`/`_count`
 * the histogram (or summary) it is a series of. `undefined` when the scrape has no such family.
 */
export function familyOf(
  metric: string,
  families: ReadonlyMap<string, Family>,
): { name: string; family: Family; suffix?: string } | undefined {
  const own = families.get(metric);
  if (own !== undefined) return { name: metric, family: own };
  for (const suffix of HISTOGRAM_SUFFIXES) {
    if (!metric.endsWith(suffix)) continue;
    const base = metric.slice(0, -suffix.length);
    const family = families.get(base);
    if (family === undefined) continue;
    if (family.type === 'histogram' || (family.type === 'summary' && suffix !== '_bucket'))
      return { name: base, family, suffix };
  }
  return undefined;
}

/**
 * Labels Prometheus adds to every series of a target; never on our own samples (`role` is set by
 * the chart's ServiceMonitor, or the plain scrape config, from the Service's component).
 */
export const TARGET_LABELS = new Set([
  'namespace',
  'instance',
  'job',
  'pod',
  'service',
  'container',
  'role',
]);

/** Series Prometheus records for each scrape of a target, never served by the target itself. */
export const SCRAPE_SERIES = new Set(['up']);

const RATE_FUNCTIONS = new Set(['rate', 'increase', 'irate']);

/**
 * What is wrong with one selector against a scrape: an unknown metric, a counter or histogram
 * series read without rate()/increase(), a gauge under rate(), a matcher on a label the metric
 * does not have (checked when the scrape shows samples of it).
 */
export function selectorProblems(
  use: SelectorUse,
  families: ReadonlyMap<string, Family>,
): string[] {
  if (SCRAPE_SERIES.has(use.metric)) {
    const own = use.labels.filter((label) => !TARGET_LABELS.has(label));
    return own.map((label) => `${use.metric} has no label ${label}`);
  }
  const found = familyOf(use.metric, families);
  if (found === undefined) return [`${use.metric} is not served`];
  const problems: string[] = [];
  const { family, suffix } = found;
  const cumulative =
    family.type === 'counter' || family.type === 'histogram' || family.type === 'summary';
  const underRate = use.func !== undefined && RATE_FUNCTIONS.has(use.func);
  if (cumulative && !underRate)
    problems.push(`${use.metric} (${family.type}) is read without rate() or increase()`);
  if (!cumulative && underRate)
    problems.push(`${use.metric} (${family.type}) is under ${use.func}()`);
  if (family.type === 'histogram' && suffix === undefined)
    problems.push(`${use.metric} is a histogram: read its _bucket, _sum or _count`);
  if (family.samples > 0) {
    for (const label of use.labels) {
      if (TARGET_LABELS.has(label) || (label === 'le' && suffix === '_bucket')) continue;
      if (!family.labels.has(label)) problems.push(`${use.metric} has no label ${label}`);
    }
  }
  return problems;
}
