import { describe, expect, it } from 'vitest';
import { AssembledPatientSchema } from '../interface/assembled-patient.ts';
import { RecordNotAssemblableError, assemblePatient } from './assemble-patient.ts';
import {
  CODE_SYSTEMS,
  ClinicalRecordSchema,
  type ClinicalItem,
  type ClinicalRecord,
} from './clinical-record.ts';

const NOW = new Date('2026-03-15T10:00:00Z');

function item(key: string, fields: Partial<ClinicalItem> = {}): ClinicalItem {
  return {
    key,
    kind: 'condition',
    codings: [{ system: CODE_SYSTEMS.icd10cm, code: 'E11.9', display: 'Type 2 diabetes' }],
    source: 'fhir',
    version: 1,
    ...fields,
  };
}

function record(items: ClinicalItem[], patient: Partial<ClinicalRecord['patient']> = {}) {
  return ClinicalRecordSchema.parse({
    items: Object.fromEntries(items.map((i) => [i.key, i])),
    patient: { birthDate: '1960-06-01', gender: 'female', race: ['White'], ...patient },
  });
}

const node = (patient: ReturnType<typeof assemblePatient>, code: string) =>
  patient.nodes.find((n) => n.coding.some((c) => c.code === code));

describe('assemblePatient: demographics', () => {
  const age = (birthDate: string, now = NOW) =>
    assemblePatient(record([], { birthDate }), { now }).demographics.age;

  it('counts whole years, respecting the birthday', () => {
    expect(age('1960-03-15')).toBe(66); // birthday today
    expect(age('1960-03-16')).toBe(65); // tomorrow
    expect(age('1960-03-14')).toBe(66);
    expect(age('2026-03-15')).toBe(0);
    expect(age('19600316')).toBe(65); // HL7 v2 form
    expect(age('1960-03-16T23:00:00Z')).toBe(65);
  });

  it('sends anyone older than 89 as 90, and 89 as 89', () => {
    expect(age('1929-01-02')).toBe(90); // 97
    expect(age('1936-03-15')).toBe(90); // 90 today
    expect(age('1936-03-16')).toBe(89); // 90 tomorrow
    expect(age('1937-01-01')).toBe(89);
  });

  it('refuses to guess an age: missing, unreadable or future birth dates throw', () => {
    for (const [birthDate, reason] of [
      [undefined, 'birth_date_missing'],
      ['', 'birth_date_missing'],
      ['1960-02-30', 'birth_date_invalid'],
      ['03/15/1960', 'birth_date_invalid'],
      ['2026-03-16', 'birth_date_in_future'],
    ] as const) {
      const rec = record([]);
      rec.patient.birthDate = birthDate;
      let error: unknown;
      try {
        assemblePatient(rec, { now: NOW });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(RecordNotAssemblableError);
      expect(error).toMatchObject({ code: 'ERR_RECORD_NOT_ASSEMBLABLE', reason });
      expect((error as Error).message).not.toContain('1960');
    }
  });

  it('maps gender to lower-case administrative gender and takes the first race', () => {
    const demo = (patient: Partial<ClinicalRecord['patient']>) =>
      assemblePatient(record([], patient), { now: NOW }).demographics;
    expect(demo({ gender: 'F', race: [' ', '2106-3', 'White'] })).toEqual({
      age: 65,
      gender: 'female',
      race: '2106-3',
    });
    expect(demo({ gender: 'MALE' }).gender).toBe('male');
    expect(demo({ gender: 'u' }).gender).toBe('unknown');
    expect(demo({ gender: undefined, race: [] })).toMatchObject({
      gender: 'unknown',
      race: 'unknown',
    });
  });
});

describe('assemblePatient: nodes', () => {
  const items = [
    item('fhir:Condition/c1', { status: 'active', problemList: true, fhirId: 'Condition/c1' }),
    item('fhir:Observation/o1', {
      kind: 'observation',
      codings: [{ system: CODE_SYSTEMS.loinc, code: '4548-4', display: 'Hemoglobin A1c' }],
      value: 8.1,
      unit: '%',
      referenceRange: '4.0-5.6',
      interpretation: 'H',
      status: 'final',
      effectiveAt: '2026-03-01',
    }),
    item('hl7:rxe:860975', {
      kind: 'medication',
      codings: [{ system: CODE_SYSTEMS.rxnorm, code: '860975', display: 'metformin 500 MG' }],
      status: 'active',
      source: 'hl7v2',
    }),
    item('fhir:Procedure/p1', {
      kind: 'procedure',
      codings: [{ system: CODE_SYSTEMS.snomed, code: '80146002', display: 'Appendectomy' }],
      effectiveAt: '2001-07-04T09:30:00-05:00',
    }),
    item('fhir:CarePlan/cp1', {
      kind: 'care_plan',
      codings: [{ system: CODE_SYSTEMS.snomed, code: '698360004' }],
    }),
    item('fhir:AllergyIntolerance/a1', {
      kind: 'allergy',
      codings: [{ system: CODE_SYSTEMS.rxnorm, code: '7980', display: 'Penicillin G' }],
    }),
    item('fhir:Immunization/i1', {
      kind: 'immunization',
      codings: [{ system: CODE_SYSTEMS.cvx, code: '140', display: 'Influenza, seasonal' }],
      effectiveAt: '2025-10-15',
    }),
  ];
  const assembled = assemblePatient(record(items), { now: NOW });

  it('is a valid AssembledPatient with opaque ids n1..nN in item-key order', () => {
    expect(AssembledPatientSchema.safeParse(assembled).success).toBe(true);
    expect(assembled.nodes.map((n) => n.id)).toEqual(['n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7']);
    // keys sorted: fhir:AllergyIntolerance, fhir:CarePlan, fhir:Condition, fhir:Immunization, ...
    expect(assembled.nodes.map((n) => n.coding[0]?.code)).toEqual([
      '7980',
      '698360004',
      'E11.9',
      '140',
      '4548-4',
      '80146002',
      '860975',
    ]);
    expect(assembled.relationships).toEqual([]);
  });

  it('is deterministic whatever the order of the record', () => {
    const reversed = assemblePatient(record([...items].reverse()), { now: NOW });
    expect(reversed).toEqual(assembled);
  });

  it('gives each kind its node type; medications, procedures, care plans are interventions', () => {
    expect(node(assembled, 'E11.9')?.node_type).toBe('condition');
    expect(node(assembled, '4548-4')?.node_type).toBe('observation');
    expect(node(assembled, '7980')?.node_type).toBe('allergy');
    expect(node(assembled, '140')?.node_type).toBe('immunization');
    for (const [code, type] of [
      ['860975', 'medication'],
      ['80146002', 'procedure'],
      ['698360004', 'care_plan'],
    ]) {
      expect(node(assembled, code ?? '')?.node_type).toBe('intervention');
      expect(node(assembled, code ?? '')?.metadata?.intervention_type).toBe(type);
    }
  });

  it('keeps the codings as given, with their displays', () => {
    expect(node(assembled, '4548-4')?.coding).toEqual([
      { system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' },
    ]);
    expect(node(assembled, '698360004')?.coding).toEqual([
      { system: 'http://snomed.info/sct', code: '698360004' },
    ]);
    const multi = assemblePatient(
      record([
        item('k', {
          codings: [
            { system: CODE_SYSTEMS.icd10cm, code: 'I10', display: 'Essential hypertension' },
            { system: CODE_SYSTEMS.snomed, code: '59621000' },
          ],
        }),
      ]),
      { now: NOW },
    );
    expect(multi.nodes[0]?.coding.map((c) => c.code)).toEqual(['I10', '59621000']);
  });

  it('carries value, unit, range, status and fhir_id into the node', () => {
    expect(node(assembled, '4548-4')?.metadata).toEqual({
      value: 8.1,
      unit: '%',
      reference_range: '4.0-5.6',
      interpretation: 'H',
      status: 'final',
      days_before_assembly: 14,
    });
    expect(node(assembled, 'E11.9')).toMatchObject({
      fhir_id: 'Condition/c1',
      metadata: { status: 'active', problem_list: true },
    });
    expect(node(assembled, '860975')?.fhir_id).toBeUndefined();
  });

  it('counts days_before_assembly in whole days, for dates and datetimes', () => {
    expect(node(assembled, '140')?.metadata?.days_before_assembly).toBe(151);
    // 2001-07-04T14:30Z to 2026-03-15T10:00Z: 9019 days and 19.5 hours, not rounded up
    const expected = Math.floor((NOW.getTime() - Date.parse('2001-07-04T14:30:00Z')) / 86_400_000);
    expect(node(assembled, '80146002')?.metadata?.days_before_assembly).toBe(expected);
    expect(expected).toBe(9019);
    const days = (effectiveAt: string) =>
      assemblePatient(record([item('x', { effectiveAt })]), { now: NOW }).nodes[0]?.metadata
        ?.days_before_assembly;
    expect(days('2026-03-15')).toBe(0);
    expect(days('2026-03-14T10:00:01Z')).toBe(0);
    expect(days('2026-03-14T10:00:00Z')).toBe(1);
    expect(days('20260305')).toBe(10);
    expect(days('2026-04-14')).toBe(-30); // a planned date
    expect(days('not a date')).toBeUndefined();
  });

  it('leaves out entered-in-error items and items without a coding', () => {
    const out = assemblePatient(
      record([
        item('a', { status: 'entered-in-error' }),
        item('b', { codings: [] }),
        item('c', { codings: [{ system: CODE_SYSTEMS.icd10cm, code: 'I10' }] }),
      ]),
      { now: NOW },
    );
    expect(out.nodes.map((n) => n.coding[0]?.code)).toEqual(['I10']);
    expect(out.nodes[0]?.id).toBe('n1');
  });
});

describe('assemblePatient: notable', () => {
  const notable = (fields: Partial<ClinicalItem>) =>
    assemblePatient(record([item('x', fields)]), { now: NOW }).nodes[0]?.notable;

  it('marks active problems: active/recurrence/relapse, or no status on the problem list', () => {
    for (const status of ['active', 'Recurrence', 'relapse']) {
      expect(notable({ status })).toBe(true);
    }
    expect(notable({ problemList: true })).toBe(true);
    for (const status of ['resolved', 'inactive', 'remission']) {
      expect(notable({ status, problemList: true })).toBe(false);
    }
    expect(notable({})).toBe(false); // an encounter diagnosis without status
    expect(notable({ problemList: false })).toBe(false);
  });

  it('marks abnormal results: any interpretation but normal', () => {
    const obs = (interpretation?: string) =>
      notable({
        kind: 'observation',
        codings: [{ system: CODE_SYSTEMS.loinc, code: '2345-7' }],
        interpretation,
      });
    for (const flag of ['H', 'L', 'A', 'HH', 'LL', '>', '<', 'AA', 'h']) {
      expect(obs(flag)).toBe(true);
    }
    for (const flag of ['N', 'n', 'normal', 'NEG', undefined]) expect(obs(flag)).toBe(false);
  });

  it('does not mark other kinds', () => {
    for (const kind of ['medication', 'procedure', 'allergy', 'immunization'] as const) {
      expect(notable({ kind, status: 'active', interpretation: 'H' })).toBe(false);
    }
  });
});

describe('assemblePatient: nothing identifying leaves', () => {
  it('has no names, identifiers, contact data, addresses, free text or calendar dates', () => {
    const rec = record(
      [
        item('hl7:problem:MRNPLANT77', {
          status: 'active',
          effectiveAt: '2019-11-23',
          fhirId: 'Condition/c1',
        }),
        item('fhir:Observation/ACCTPLANT88', {
          kind: 'observation',
          codings: [{ system: CODE_SYSTEMS.loinc, code: '2345-7', display: 'Glucose' }],
          value: 'Patient PLANTNAME said she felt dizzy after lunch and skipped her dose again',
          referenceRange: '2024-01-05',
          unit: '12/31/2023',
          effectiveAt: '2024-01-05T08:00:00Z',
        }),
        item('fhir:Observation/o2', {
          kind: 'observation',
          codings: [{ system: CODE_SYSTEMS.loinc, code: '8302-2' }],
          value: '20240105',
        }),
      ],
      {
        birthDate: '1957-08-19',
        names: ['PLANTNAME^Janet^Q'],
        identifiers: ['MRNPLANT77', '999-88-7777'],
        phones: ['(555) 867-5309'],
        emails: ['plant@example.org'],
        addresses: ['42 PLANTSTREET Rd^^Springfield^IL^62701'],
      },
    );
    const text = JSON.stringify(assemblePatient(rec, { now: NOW }));
    for (const marker of [
      'PLANTNAME',
      'Janet',
      'MRNPLANT77',
      'ACCTPLANT88',
      '999-88-7777',
      '867-5309',
      'plant@example.org',
      'PLANTSTREET',
      '62701',
      'dizzy',
      'problem:',
      '1957',
      '08-19',
      '2019-11-23',
      '2019',
      '2024',
      '12/31',
    ]) {
      expect(text).not.toContain(marker);
    }
    expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}/);
    expect(text).toContain('Glucose');
    expect(text).toContain('"days_before_assembly"');
  });
});

describe('assemblePatient: what is not the patient’s own clinical fact', () => {
  it('never makes a node of a family history or of questionnaire answers', () => {
    const patient = assemblePatient(
      record([
        item('c1'),
        item('fmh', {
          kind: 'family_history',
          codings: [{ system: CODE_SYSTEMS.snomed, code: '315619001' }],
          relationship: {
            system: 'http://terminology.hl7.org/CodeSystem/v3-RoleCode',
            code: 'FTH',
          },
        }),
        item('qr', {
          kind: 'questionnaire',
          codings: [{ system: CODE_SYSTEMS.loinc, code: '72109-2' }],
          components: [{ codings: [{ system: CODE_SYSTEMS.loinc, code: '75626-2' }], value: 5 }],
        }),
      ]),
      { now: NOW },
    );
    expect(patient.nodes.map((n) => n.coding.map((c) => c.code))).toEqual([['E11.9']]);
  });
});
