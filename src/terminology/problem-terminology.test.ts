import { describe, expect, it } from 'vitest';
import { problemListCategories } from '../presets/problem-list.ts';
import { applyClinicalChanges } from '../records/apply-clinical-changes.ts';
import type { ClinicalChange, ReportedItem } from '../records/clinical-change.ts';
import { emptyClinicalRecord } from '../records/clinical-record.ts';
import { parseCsvCodeMap } from './csv-code-map.ts';
import { ProblemTerminology } from './problem-terminology.ts';
import { loadRf2ExtendedMap } from './rf2-extended-map.ts';

const RF2 = loadRf2ExtendedMap(
  new URL(
    '../../test/fixtures/terminology/der2_iisssccRefset_ExtendedMapFull_TEST_20250301.txt',
    import.meta.url,
  ).pathname,
);
const SCT = 'http://snomed.info/sct';
const ICD10 = 'http://hl7.org/fhir/sid/icd-10-cm';

function condition(
  key: string,
  codings: ReportedItem['codings'],
  extra: Partial<ReportedItem> = {},
): ClinicalChange {
  return {
    type: 'upsert',
    item: { key, kind: 'condition', codings, source: 'fhir', status: 'active', ...extra },
  };
}

function codingsOf(changes: ClinicalChange[], key: string) {
  for (const c of changes) if (c.type === 'upsert' && c.item.key === key) return c.item.codings;
  return undefined;
}

describe('ProblemTerminology.annotate', () => {
  it('the embedded map alone: SNOMED hypertension and diabetes get I10 and E11.9 and drive CIR007/END002', async () => {
    const t = new ProblemTerminology({ sources: ['embedded'] });
    const changes = await t.annotate(
      [
        condition('htn', [{ system: SCT, code: '38341003', display: 'Hypertension' }]),
        condition('dm', [{ system: 'SCT', code: '44054006' }]),
      ],
      emptyClinicalRecord(),
    );
    expect(codingsOf(changes, 'htn')).toEqual([
      { system: SCT, code: '38341003', display: 'Hypertension' },
      { system: ICD10, code: 'I10' },
    ]);
    expect(codingsOf(changes, 'dm')).toEqual([
      { system: 'SCT', code: '44054006' },
      { system: ICD10, code: 'E11.9' },
    ]);
    const record = applyClinicalChanges(emptyClinicalRecord(), changes, 1).record;
    expect(problemListCategories(record, 'outpatient_default')).toEqual(['CIR007', 'END002']);
  });

  it('leaves a problem that already has ICD-10-CM, and non-conditions, as they are', async () => {
    const t = new ProblemTerminology({ sources: ['embedded'] });
    const given: ClinicalChange[] = [
      condition('both', [
        { system: SCT, code: '38341003' },
        { system: 'I10', code: 'I15.0' },
      ]),
      {
        type: 'upsert',
        item: {
          key: 'obs',
          kind: 'observation',
          codings: [{ system: SCT, code: '38341003' }],
          source: 'fhir',
        },
      },
      { type: 'remove', key: 'gone' },
    ];
    expect(await t.annotate(given, emptyClinicalRecord())).toEqual(given);
  });

  it('RF2 rules use the gender and the age at onset from the same message or the stored record', async () => {
    const t = new ProblemTerminology({ sources: ['rf2_file'], rf2: RF2 });
    const child = await t.annotate(
      [
        { type: 'patient', facets: { birthDate: '2010-05-01', gender: 'male' } },
        condition('a', [{ system: SCT, code: '100000001' }], { effectiveAt: '2019-01-01' }),
        condition('b', [{ system: SCT, code: '100000002' }]),
      ],
      emptyClinicalRecord(),
    );
    expect(
      codingsOf(child, 'a')
        ?.slice(1)
        .map((c) => c.code),
    ).toEqual(['E10.9', 'Z79.4']);
    expect(
      codingsOf(child, 'b')
        ?.slice(1)
        .map((c) => c.code),
    ).toEqual(['N40.0']);

    const stored = emptyClinicalRecord();
    stored.patient.birthDate = '1950-01-01';
    stored.patient.gender = 'F';
    const adult = await t.annotate(
      [
        condition('a', [{ system: SCT, code: '100000001' }], { effectiveAt: '2019-01-01' }),
        condition('b', [{ system: SCT, code: '100000002' }]),
      ],
      stored,
    );
    expect(
      codingsOf(adult, 'a')
        ?.slice(1)
        .map((c) => c.code),
    ).toEqual(['E11.9', 'Z79.4']);
    expect(codingsOf(adult, 'b')).toEqual([{ system: SCT, code: '100000002' }]);
  });

  it('sources are tried in the configured order, the first non-empty answer wins; replace items are mapped too', async () => {
    const csv = parseCsvCodeMap('system,code,icd10cm\nSCT,38341003,I15.9\nI9,401.9,I10\n');
    const csvFirst = new ProblemTerminology({ sources: ['csv_file', 'embedded'], csv });
    const embeddedFirst = new ProblemTerminology({ sources: ['embedded', 'csv_file'], csv });
    const htn = [condition('htn', [{ system: SCT, code: '38341003' }])];
    expect(codingsOf(await csvFirst.annotate(htn, emptyClinicalRecord()), 'htn')?.[1]?.code).toBe(
      'I15.9',
    );
    expect(
      codingsOf(await embeddedFirst.annotate(htn, emptyClinicalRecord()), 'htn')?.[1]?.code,
    ).toBe('I10');

    const [replaced] = await csvFirst.annotate(
      [
        {
          type: 'replace',
          items: [
            {
              key: 'old',
              kind: 'condition',
              codings: [{ system: 'I9', code: '401.9' }],
              source: 'hl7v2',
            },
          ],
        },
      ],
      emptyClinicalRecord(),
    );
    expect(replaced?.type === 'replace' ? replaced.items[0]?.codings[1] : undefined).toEqual({
      system: ICD10,
      code: 'I10',
    });
  });

  it('a disabled source is not used: without the embedded source, SNOMED stays unmapped', async () => {
    const t = new ProblemTerminology({ sources: [] });
    const changes = await t.annotate(
      [condition('htn', [{ system: SCT, code: '38341003' }])],
      emptyClinicalRecord(),
    );
    expect(codingsOf(changes, 'htn')).toEqual([{ system: SCT, code: '38341003' }]);
  });
});
