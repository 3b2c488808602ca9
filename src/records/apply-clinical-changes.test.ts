import { describe, expect, it } from 'vitest';
import { applyClinicalChanges } from './apply-clinical-changes.ts';
import type { ReportedItem } from './clinical-change.ts';
import { CODE_SYSTEMS, emptyClinicalRecord } from './clinical-record.ts';

const problem = (code: string, status = 'active'): ReportedItem => ({
  key: `hl7:problem:${code}`,
  kind: 'condition',
  codings: [{ system: CODE_SYSTEMS.icd10cm, code }],
  status,
  problemList: true,
  source: 'hl7v2',
});

describe('applyClinicalChanges', () => {
  it('adds, replaces and removes items by key, stamping the version of each change', () => {
    const one = applyClinicalChanges(
      emptyClinicalRecord(),
      [{ type: 'upsert', item: problem('E11.9') }],
      1,
    );
    expect(one.changed).toBe(true);
    expect(one.record.items['hl7:problem:E11.9']?.version).toBe(1);

    const same = applyClinicalChanges(one.record, [{ type: 'upsert', item: problem('E11.9') }], 2);
    expect(same.changed).toBe(false);
    expect(same.record.items['hl7:problem:E11.9']?.version).toBe(1);

    const resolved = applyClinicalChanges(
      one.record,
      [{ type: 'upsert', item: problem('E11.9', 'resolved') }],
      2,
    );
    expect(resolved.changed).toBe(true);
    expect(resolved.record.items['hl7:problem:E11.9']).toMatchObject({
      status: 'resolved',
      version: 2,
    });

    const removed = applyClinicalChanges(
      resolved.record,
      [{ type: 'remove', key: 'hl7:problem:E11.9' }],
      3,
    );
    expect(removed.changed).toBe(true);
    expect(removed.record.items).toEqual({});
    expect(applyClinicalChanges(removed.record, [{ type: 'remove', key: 'nope' }], 4).changed).toBe(
      false,
    );
  });

  it('finds a resent item unchanged whatever the order of its fields (as read back from storage)', () => {
    const stored = applyClinicalChanges(
      emptyClinicalRecord(),
      [{ type: 'upsert', item: problem('E11.9') }],
      1,
    );
    // The sealed record comes back from JSON with its fields in the stored order.
    const reread = JSON.parse(JSON.stringify(stored.record)) as typeof stored.record;
    const { key, kind, source, ...rest } = problem('E11.9');
    const reordered: ReportedItem = { source, ...rest, kind, key, unit: undefined };
    const again = applyClinicalChanges(reread, [{ type: 'upsert', item: reordered }], 2);
    expect(again.changed).toBe(false);
    expect(again.record.items['hl7:problem:E11.9']?.version).toBe(1);
  });

  it('unions identity facets and keeps the newest birth date and gender', () => {
    const a = applyClinicalChanges(
      emptyClinicalRecord(),
      [
        {
          type: 'patient',
          facets: { names: ['DOE^JANE'], identifiers: ['MRN1'], birthDate: '1950-01-02' },
        },
      ],
      1,
    );
    const b = applyClinicalChanges(
      a.record,
      [{ type: 'patient', facets: { names: ['DOE^JANE', 'ROE^JANE'], gender: 'female' } }],
      2,
    );
    expect(b.record.patient).toMatchObject({
      names: ['DOE^JANE', 'ROE^JANE'],
      identifiers: ['MRN1'],
      birthDate: '1950-01-02',
      gender: 'female',
    });
    expect(
      applyClinicalChanges(b.record, [{ type: 'patient', facets: { names: ['ROE^JANE'] } }], 3)
        .changed,
    ).toBe(false);
  });

  it('replaces every item for a whole-patient bundle', () => {
    const start = applyClinicalChanges(
      emptyClinicalRecord(),
      [
        { type: 'upsert', item: problem('E11.9') },
        { type: 'upsert', item: problem('I10') },
      ],
      1,
    );
    const replaced = applyClinicalChanges(
      start.record,
      [{ type: 'replace', items: [problem('I10'), problem('J45.909')] }],
      2,
    );
    expect(Object.keys(replaced.record.items).sort()).toEqual([
      'hl7:problem:I10',
      'hl7:problem:J45.909',
    ]);
    expect(replaced.record.items['hl7:problem:I10']?.version).toBe(1);
  });
});
