import { describe, expect, it } from 'vitest';
import { computeFigures } from './figures.ts';
import { verdictOf } from './verdict.ts';

const clean = computeFigures({
  sent: [],
  events: [],
  attempts: [],
  serviceRequests: [],
  faults: [],
  startedAt: 0,
  endedAt: 1,
});
const outcome = (lost: number, ok = true) => ({
  figures: { ...clean, lost },
  checks: [{ name: 'survived', ok }],
  details: {},
});
const marked = { name: 's', description: 'd', known_defect: 'issue 8 point 1' };
const unmarked = { name: 's', description: 'd' };

describe('verdictOf', () => {
  it('passes with 0 lost and every check held', () => {
    expect(verdictOf(unmarked, outcome(0), false)).toMatchObject({
      pass: true,
      reasons: [],
      counts_as_failure: false,
    });
  });

  it('fails on a lost update or a failed check, with the reason', () => {
    expect(verdictOf(unmarked, outcome(2), true)).toMatchObject({
      pass: false,
      reasons: ['2 acknowledged updates lost'],
      counts_as_failure: true,
    });
    expect(verdictOf(unmarked, outcome(0, false), true).reasons).toEqual([
      'check failed: survived',
    ]);
  });

  it('a known_defect mark keeps a failure from the exit code in --quick only', () => {
    expect(verdictOf(marked, outcome(2), true)).toMatchObject({
      pass: false,
      known_defect: 'issue 8 point 1',
      counts_as_failure: false,
    });
    expect(verdictOf(marked, outcome(2), false).counts_as_failure).toBe(true);
  });

  it('a scenario that could not run counts as a failure even when marked', () => {
    expect(verdictOf(marked, new Error('redis-server missing'), true)).toMatchObject({
      pass: false,
      counts_as_failure: true,
      error: 'redis-server missing',
    });
  });
});
