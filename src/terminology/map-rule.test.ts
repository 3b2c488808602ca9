import { describe, expect, it } from 'vitest';
import { mapRuleHolds } from './map-rule.ts';

const AGE_UNDER_18 =
  'IFA 445518008 | Age at onset of clinical finding (observable entity) | < 18.0 years';
const MALE = 'IFA 248153007 | Male (finding) |';
const FEMALE = 'IFA 248152002 | Female (finding) |';

describe('mapRuleHolds', () => {
  it('TRUE, OTHERWISE TRUE and an empty rule always hold', () => {
    for (const rule of ['TRUE', 'OTHERWISE TRUE', ' otherwise  true ', '']) {
      expect(mapRuleHolds(rule, {})).toBe(true);
    }
  });

  it('age at onset: compares the age in years, strictly for <', () => {
    expect(mapRuleHolds(AGE_UNDER_18, { ageYears: 17.99 })).toBe(true);
    expect(mapRuleHolds(AGE_UNDER_18, { ageYears: 18 })).toBe(false);
    expect(mapRuleHolds(AGE_UNDER_18, { ageYears: 40 })).toBe(false);
    const atLeast =
      'IFA 445518008 | Age at onset of clinical finding (observable entity) | >= 12.0 years';
    expect(mapRuleHolds(atLeast, { ageYears: 12 })).toBe(true);
    expect(mapRuleHolds(atLeast, { ageYears: 11.5 })).toBe(false);
  });

  it('an age rule with no known age does not hold (the group falls to OTHERWISE)', () => {
    expect(mapRuleHolds(AGE_UNDER_18, {})).toBe(false);
  });

  it('months and the current-age concept are understood', () => {
    const months = 'IFA 424144002 | Current chronological age (observable entity) | < 6.0 months';
    expect(mapRuleHolds(months, { ageYears: 0.4 })).toBe(true);
    expect(mapRuleHolds(months, { ageYears: 0.6 })).toBe(false);
  });

  it('gender rules test the administrative gender; unknown gender holds for neither', () => {
    expect(mapRuleHolds(MALE, { gender: 'male' })).toBe(true);
    expect(mapRuleHolds(MALE, { gender: 'female' })).toBe(false);
    expect(mapRuleHolds(FEMALE, { gender: 'female' })).toBe(true);
    expect(mapRuleHolds(MALE, {})).toBe(false);
    expect(mapRuleHolds(FEMALE, { gender: 'unknown' })).toBe(false);
  });

  it('clauses joined by AND all have to hold', () => {
    const rule = `${FEMALE} AND ${AGE_UNDER_18}`;
    expect(mapRuleHolds(rule, { gender: 'female', ageYears: 10 })).toBe(true);
    expect(mapRuleHolds(rule, { gender: 'female', ageYears: 30 })).toBe(false);
    expect(mapRuleHolds(rule, { gender: 'male', ageYears: 10 })).toBe(false);
  });

  it('IFA of another concept holds when the patient has that problem', () => {
    const rule = 'IFA 38341003 | Hypertensive disorder, systemic arterial (disorder) |';
    expect(mapRuleHolds(rule, { conditions: new Set(['38341003']) })).toBe(true);
    expect(mapRuleHolds(rule, { conditions: new Set(['44054006']) })).toBe(false);
    expect(mapRuleHolds(rule, {})).toBe(false);
  });

  it('a syntax it does not know does not hold', () => {
    expect(mapRuleHolds('IF SOMETHING ELSE', { gender: 'male', ageYears: 3 })).toBe(false);
    expect(mapRuleHolds('IFA 445518008 | Age | < 18.0 fortnights', { ageYears: 3 })).toBe(false);
  });
});
