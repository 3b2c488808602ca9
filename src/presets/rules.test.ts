import { describe, expect, it } from 'vitest';
import { categoriesFromRules, type PresetRule } from './rules.ts';

const rules: PresetRule[] = [
  { ccsr_category: 'CIR007' },
  { ccsr_category: 'END002', when_changes: ['Condition', 'Observation'] },
  { ccsr_category: 'RSP009', when_changes: ['MedicationRequest'] },
];

describe('categoriesFromRules', () => {
  it('applies a rule without when_changes to every update, even one naming no changes', () => {
    expect(categoriesFromRules(rules)).toEqual(['CIR007']);
    expect(categoriesFromRules(rules, [])).toEqual(['CIR007']);
  });

  it('applies a rule with when_changes only when the changes intersect it', () => {
    expect(categoriesFromRules(rules, ['Observation'])).toEqual(['CIR007', 'END002']);
    expect(categoriesFromRules(rules, ['Procedure'])).toEqual(['CIR007']);
    expect(categoriesFromRules(rules, ['Condition', 'MedicationRequest'])).toEqual([
      'CIR007',
      'END002',
      'RSP009',
    ]);
  });

  it('compares kinds of data case-insensitively', () => {
    expect(categoriesFromRules(rules, ['observation'])).toEqual(['CIR007', 'END002']);
    expect(categoriesFromRules(rules, ['MEDICATIONREQUEST'])).toEqual(['CIR007', 'RSP009']);
  });

  it('names a category once when several rules ask for it', () => {
    const twice: PresetRule[] = [
      { ccsr_category: 'END002' },
      { ccsr_category: 'END002', when_changes: ['Observation'] },
    ];
    expect(categoriesFromRules(twice, ['Observation'])).toEqual(['END002']);
  });

  it('asks for nothing without rules', () => {
    expect(categoriesFromRules([], ['Observation'])).toEqual([]);
  });
});
