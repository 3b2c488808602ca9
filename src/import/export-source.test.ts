import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ExportSource, outcomeText, retryAfterSeconds } from './export-source.ts';

describe('retryAfterSeconds', () => {
  it('reads a delay or an HTTP date, and nothing else', () => {
    expect(retryAfterSeconds('5')).toBe(5);
    expect(retryAfterSeconds(' 0 ')).toBe(0);
    const now = Date.parse('2026-11-28T10:00:00Z');
    expect(retryAfterSeconds('Sat, 28 Nov 2026 10:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Sat, 28 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds(undefined)).toBeUndefined();
    expect(retryAfterSeconds('soon')).toBeUndefined();
  });
});

describe('ExportSource.kickOffUrl', () => {
  const logger = pino({ level: 'silent' });
  it('builds the level, _type and _since', () => {
    const at = (level: 'system' | 'patient' | 'group', groupId?: string) =>
      new ExportSource({
        fhirBaseUrl: 'https://ehr.example/fhir',
        level,
        groupId,
        types: ['Patient', 'Condition'],
        since: '2026-11-01T00:00:00Z',
        logger,
      })
        .kickOffUrl()
        .toString();
    expect(at('system')).toBe(
      'https://ehr.example/fhir/$export?_type=Patient%2CCondition&_since=2026-11-01T00%3A00%3A00Z',
    );
    expect(at('patient')).toContain('https://ehr.example/fhir/Patient/$export?');
    expect(at('group', 'clinic 1')).toContain('https://ehr.example/fhir/Group/clinic%201/$export?');
  });

  it('is one source for the same export whatever the order of the types', () => {
    const of = (types: string[]) =>
      new ExportSource({ fhirBaseUrl: 'https://e/fhir', level: 'patient', types, logger }).identity;
    expect(of(['Patient', 'Condition'])).toBe(of(['Condition', 'Patient']));
    expect(of(['Patient'])).not.toBe(of(['Patient', 'Condition']));
  });
});

describe('outcomeText', () => {
  it("gives an OperationOutcome's first diagnostics, shortened, and nothing for anything else", () => {
    const outcome = (diagnostics: string) =>
      JSON.stringify({
        resourceType: 'OperationOutcome',
        issue: [{ severity: 'error', diagnostics }],
      });
    expect(outcomeText(outcome('Unsupported _type MedicationStatement'))).toBe(
      ': Unsupported _type MedicationStatement',
    );
    expect(outcomeText(outcome('x'.repeat(300)))).toHaveLength(202);
    expect(outcomeText('<html>')).toBe('');
    expect(outcomeText(JSON.stringify({ resourceType: 'Patient' }))).toBe('');
  });
});
