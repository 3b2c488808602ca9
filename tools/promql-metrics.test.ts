import { describe, expect, it } from 'vitest';
import {
  dashboardExprs,
  familyOf,
  ruleExprs,
  selectorProblems,
  selectorsOf,
  shippedExprs,
  type Family,
} from './promql-metrics.ts';

const family = (type: string, labels: string[] = [], samples = 1): Family => ({
  type,
  labels: new Set(labels),
  samples,
});

describe('selectorsOf', () => {
  it('finds every selector, its matcher labels and the function it is read through', () => {
    expect(
      selectorsOf(
        'histogram_quantile(0.95, sum by (le) (rate(cw_poll_lateness_seconds_bucket{namespace=~"$namespace"}[$__rate_interval])))' +
          ' / max by (queue) (cw_queue_jobs{state="waiting", queue=~"q.*"})',
      ),
    ).toEqual([
      { metric: 'cw_poll_lateness_seconds_bucket', labels: ['namespace'], func: 'rate' },
      { metric: 'cw_queue_jobs', labels: ['state', 'queue'] },
    ]);
    expect(selectorsOf('sum(increase(cw_dead_letters_total[15m])) > 0')).toEqual([
      { metric: 'cw_dead_letters_total', labels: [], func: 'increase' },
    ]);
  });

  it('throws on a syntax error and on a selector without a metric name', () => {
    expect(() => selectorsOf('sum(rate(cw_polls_total[5m])')).toThrow(/syntax error/);
    expect(() => selectorsOf('{__name__="cw_polls_total"}')).toThrow(/without a metric name/);
  });
});

describe('familyOf and selectorProblems', () => {
  const families = new Map<string, Family>([
    ['cw_polls_total', family('counter', ['state'])],
    ['cw_poll_lateness_seconds', family('histogram', ['le'])],
    ['cw_queue_jobs', family('gauge', ['queue', 'state'])],
    ['cw_dead_letters_total', family('counter', [], 0)],
  ]);

  it('strips _bucket, _sum and _count only for histograms', () => {
    expect(familyOf('cw_poll_lateness_seconds_bucket', families)?.name).toBe(
      'cw_poll_lateness_seconds',
    );
    expect(familyOf('cw_poll_lateness_seconds_count', families)?.suffix).toBe('_count');
    expect(familyOf('cw_queue_jobs_count', families)).toBeUndefined();
    expect(familyOf('cw_polls_total', families)?.family.type).toBe('counter');
  });

  it('names unknown metrics, misused types and unknown labels', () => {
    expect(
      selectorProblems({ metric: 'cw_nope_total', labels: [], func: 'rate' }, families),
    ).toEqual(['cw_nope_total is not served']);
    expect(selectorProblems({ metric: 'cw_polls_total', labels: ['status'] }, families)).toEqual([
      'cw_polls_total (counter) is read without rate() or increase()',
      'cw_polls_total has no label status',
    ]);
    expect(
      selectorProblems({ metric: 'cw_queue_jobs', labels: [], func: 'rate' }, families),
    ).toEqual(['cw_queue_jobs (gauge) is under rate()']);
    expect(
      selectorProblems({ metric: 'cw_poll_lateness_seconds', labels: [], func: 'rate' }, families),
    ).toEqual(['cw_poll_lateness_seconds is a histogram: read its _bucket, _sum or _count']);
    // Target labels and `le` on buckets are fine; labels of a family without samples are not known.
    expect(
      selectorProblems(
        { metric: 'cw_poll_lateness_seconds_bucket', labels: ['namespace', 'le'], func: 'rate' },
        families,
      ),
    ).toEqual([]);
    expect(
      selectorProblems(
        { metric: 'cw_dead_letters_total', labels: ['channel'], func: 'increase' },
        families,
      ),
    ).toEqual([]);
  });

  it("takes Prometheus' own up series as served, with target labels only", () => {
    expect(selectorProblems({ metric: 'up', labels: ['job', 'role'] }, families)).toEqual([]);
    expect(selectorProblems({ metric: 'up', labels: ['job', 'queue'] }, families)).toEqual([
      'up has no label queue',
    ]);
  });
});

describe('the shipped dashboard and rules', () => {
  it('parse, and every panel has a query', () => {
    const exprs = shippedExprs();
    expect(exprs.length).toBeGreaterThan(30);
    for (const { expr } of exprs) expect(selectorsOf(expr).length).toBeGreaterThan(0);
  });

  it('reads the expressions of a dashboard and a rules file', () => {
    const dashboard = JSON.stringify({
      panels: [
        { title: 'Row', type: 'row' },
        {
          title: 'Polls',
          type: 'timeseries',
          targets: [{ expr: 'sum(rate(cw_polls_total[5m]))' }],
        },
      ],
      templating: {
        list: [{ name: 'ns', query: { query: 'label_values(cw_redis_up, namespace)' } }],
      },
    });
    expect(dashboardExprs(dashboard)).toEqual([
      { source: 'panel "Polls"', expr: 'sum(rate(cw_polls_total[5m]))' },
      { source: 'variable ns', expr: 'cw_redis_up' },
    ]);
    expect(() =>
      dashboardExprs(JSON.stringify({ panels: [{ title: 'Empty', type: 'stat', targets: [] }] })),
    ).toThrow(/no query/);
    expect(ruleExprs('groups: [{name: g, rules: [{alert: A, expr: "up == 0"}]}]')).toEqual([
      { source: 'rule A', expr: 'up == 0' },
    ]);
  });
});
