import { describe, expect, it } from 'vitest';
import { JobStatusClassifier } from './job-status-classifier.ts';

describe('JobStatusClassifier', () => {
  const classifier = new JobStatusClassifier();
  const stateOf = (status: string): string => classifier.classify(status).state;

  it('maps the default success, failure and lost values', () => {
    for (const s of [
      'completed',
      'complete',
      'succeeded',
      'success',
      'synthesis_success',
      'done',
    ]) {
      expect(stateOf(s)).toBe('success');
    }
    for (const s of ['failed', 'error', 'cancelled']) expect(stateOf(s)).toBe('failure');
    for (const s of ['not_exists', 'not_found', 'expired']) expect(stateOf(s)).toBe('lost');
  });

  it('compares case-insensitively and ignores surrounding blanks', () => {
    expect(stateOf('COMPLETED')).toBe('success');
    expect(stateOf(' Synthesis_Success ')).toBe('success');
    expect(stateOf('Not_Exists')).toBe('lost');
  });

  it('treats anything else as pending, telling known from unknown values', () => {
    expect(classifier.classify('running')).toEqual({ state: 'pending', known: true });
    expect(classifier.classify('IN_PROGRESS')).toEqual({ state: 'pending', known: true });
    expect(classifier.classify('reticulating')).toEqual({ state: 'pending', known: false });
  });

  it('replaces a default set with a configured one', () => {
    const custom = new JobStatusClassifier({ success: ['Finished'], lost: ['gone'] });
    expect(custom.classify('finished').state).toBe('success');
    expect(custom.classify('completed')).toEqual({ state: 'pending', known: false });
    expect(custom.classify('GONE').state).toBe('lost');
    expect(custom.classify('failed').state).toBe('failure');
  });

  it('refuses a value listed in two sets', () => {
    expect(() => new JobStatusClassifier({ failure: ['done'] })).toThrow(
      /both success and failure/,
    );
  });
});
