import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mapClinicalResource, parsePatient, patientFacets } from '../ingest/fhir/map-resource.ts';
import type { ClinicalChange } from './clinical-change.ts';
import { emptyClinicalRecord, type ClinicalRecord } from './clinical-record.ts';
import { applyClinicalChanges } from './apply-clinical-changes.ts';
import { RecordNotAssemblableError } from './assemble-patient.ts';
import { knownIdentifiers } from './known-identifiers.ts';
import { IdentifierLeakError } from './prepare-for-service.ts';
import { buildPreventPayload, PreventNoDataError } from './prevent-payload.ts';

/** FHIR examples written by others (test/fixtures/fhir/prevent/SOURCES.md). */
const FIXTURES = new URL('../../test/fixtures/fhir/prevent/', import.meta.url);
const load = (name: string) =>
  JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as { resourceType: string; id: string };

const PATIENT = 'r4-Patient-example.json';
const LOCAL_ID = 'MRN-PREVENT-7781';
const NOW = new Date('2026-06-01T12:00:00Z');

/** The clinical record the FHIR intake makes of these resources (the Patient's facets included). */
function recordOf(...names: string[]): ClinicalRecord {
  const changes: ClinicalChange[] = names.map((name) => {
    const resource = load(name);
    if (resource.resourceType === 'Patient') {
      return { type: 'patient', facets: patientFacets(parsePatient(resource, []), resource.id) };
    }
    const mapped = mapClinicalResource(resource, []);
    if (mapped === undefined) throw new Error(`${name} is not mapped`);
    return mapped.change;
  });
  return applyClinicalChanges(emptyClinicalRecord(), changes, 1).record;
}

const build = (clinical: ClinicalRecord, now = NOW) =>
  buildPreventPayload(
    { clinical },
    { now, localId: LOCAL_ID, knownIdentifiers: knownIdentifiers(LOCAL_ID, clinical.patient) },
  );

describe('patient_demographics', () => {
  it('is the age in whole years and the gender as the assembled record names it', () => {
    const payload = build(recordOf(PATIENT, 'r4-Observation-bmi.json'));
    // Born 1974-12-25: 51 on 2026-06-01.
    expect(payload.patient_demographics).toEqual({ age: 51, gender: 'male' });
  });

  it('caps the age at 90 for anyone older than 89, and only then', () => {
    const record = recordOf(PATIENT, 'r4-Observation-bmi.json');
    expect(build(record, new Date('2064-12-24T00:00:00Z')).patient_demographics.age).toBe(89);
    expect(build(record, new Date('2064-12-25T00:00:00Z')).patient_demographics.age).toBe(90);
    expect(build(record, new Date('2071-03-01T00:00:00Z')).patient_demographics.age).toBe(90);
  });

  it('needs a birth date (the run waits for one, as a concordance query does)', () => {
    expect(() => build(recordOf('r4-Observation-bmi.json'))).toThrow(RecordNotAssemblableError);
  });

  it('takes a JSON AssembledPatient as it is (its age already capped)', () => {
    const payload = buildPreventPayload(
      {
        assembled: {
          nodes: [
            {
              id: 'o1',
              node_type: 'observation',
              notable: false,
              coding: [{ system: 'http://loinc.org', code: '4548-4' }],
              metadata: { value: 48, unit: 'mmol/mol' },
            },
          ],
          relationships: [],
          demographics: { age: 90, gender: 'F' },
        },
      },
      { now: NOW, localId: LOCAL_ID },
    );
    expect(payload.patient_demographics).toEqual({ age: 90, gender: 'female' });
    // IFCC 48 mmol/mol is NGSP 6.54 %.
    expect(payload.patient_biomarkers.hba1c?.valueQuantity).toEqual({
      value: 6.54,
      unit: '%',
      system: 'http://unitsofmeasure.org',
      code: '%',
    });
  });
});

describe('patient_biomarkers', () => {
  it('sends LOINC-coded values in each biomarker’s UCUM unit, converting the others', () => {
    const payload = build(
      recordOf(
        PATIENT,
        'r4-Observation-bmi.json',
        'r4-Observation-blood-pressure.json',
        'r4-Observation-body-height.json',
        'r4-Observation-example.json',
        'r4-Observation-f001.json',
        'r4-Observation-heart-rate.json',
      ),
    );
    const ucum = (value: number, unit: string) => ({
      value,
      unit,
      system: 'http://unitsofmeasure.org',
      code: unit,
    });
    const loinc = (code: string) => ({ system: 'http://loinc.org', code });
    expect(payload.patient_biomarkers).toEqual({
      bmi: { code: loinc('39156-5'), valueQuantity: ucum(16.2, 'kg/m2') },
      // The panel 85354-9 gives its two components.
      systolic_blood_pressure: { code: loinc('8480-6'), valueQuantity: ucum(107, 'mm[Hg]') },
      diastolic_blood_pressure: { code: loinc('8462-4'), valueQuantity: ucum(60, 'mm[Hg]') },
      // 66.9 [in_i] and 185 [lb_av].
      body_height: { code: loinc('8302-2'), valueQuantity: ucum(169.93, 'cm') },
      body_weight: { code: loinc('29463-7'), valueQuantity: ucum(83.91, 'kg') },
      // 6.3 mmol/L (15074-8, moles per volume) is sent as mass per volume, under 2345-7.
      glucose: { code: loinc('2345-7'), valueQuantity: ucum(113.5, 'mg/dL') },
      heart_rate: { code: loinc('8867-4'), valueQuantity: ucum(44, '/min') },
    });
  });

  it('leaves out a value whose unit is missing or unknown (never guessed), and keeps the newest', () => {
    const observation = (id: string, at: string, value: number, unit?: string) => ({
      type: 'upsert' as const,
      item: {
        key: `fhir:Observation/${id}`,
        kind: 'observation' as const,
        source: 'fhir' as const,
        codings: [{ system: 'http://loinc.org', code: '29463-7' }],
        value,
        ...(unit === undefined ? {} : { unit }),
        effectiveAt: at,
      },
    });
    const base = recordOf(PATIENT, 'r4-Observation-bmi.json');
    const record = applyClinicalChanges(
      base,
      [
        observation('w-old', '2020-01-01', 70, 'kg'),
        observation('w-stone', '2025-01-01', 12, 'stone'),
        observation('w-bare', '2025-06-01', 90),
        observation('w-new', '2024-01-01', 71.5, 'kg'),
      ],
      2,
    ).record;
    // The two newest have no usable unit: the newest with one is taken.
    expect(build(record).patient_biomarkers.body_weight?.valueQuantity?.value).toBe(71.5);
  });
});

describe('patient_history', () => {
  it('maps the smoking status (US Core 72166-2) to its answer and status', () => {
    const payload = build(recordOf(PATIENT, 'us-core-some-day-smoker.json'));
    expect(payload.patient_history.smoking_status).toEqual({
      code: { system: 'http://loinc.org', code: '72166-2' },
      valueCoding: { system: 'http://snomed.info/sct', code: '428041000124106' },
      status: 'current',
    });
  });

  it('reads a bare answer code (an HL7 v2 OBX) and infers its system; the newest status wins', () => {
    const status = (key: string, at: string, value: string) => ({
      type: 'upsert' as const,
      item: {
        key,
        kind: 'observation' as const,
        source: 'hl7v2' as const,
        codings: [{ system: 'http://loinc.org', code: '72166-2' }],
        value,
        effectiveAt: at,
      },
    });
    const record = applyClinicalChanges(
      recordOf(PATIENT),
      [status('hl7:obx:1', '20190101', '449868002'), status('hl7:obx:2', '20250101', '8517006')],
      2,
    ).record;
    expect(build(record).patient_history.smoking_status).toEqual({
      code: { system: 'http://loinc.org', code: '72166-2' },
      valueCoding: { system: 'http://snomed.info/sct', code: '8517006' },
      status: 'former',
    });
  });

  it('maps alcohol: drinks per day (whatever unit text) and the AUDIT-C score', () => {
    const payload = build(
      recordOf(
        PATIENT,
        'us-core-Observation-alcoholic-drinks-per-day.json',
        'us-core-Observation-AUDIT-C-item-example-75626-2.json',
      ),
    );
    expect(payload.patient_history.alcohol).toEqual({
      drinks_per_day: {
        code: { system: 'http://loinc.org', code: '74013-4' },
        valueQuantity: { value: 0, unit: '/d', system: 'http://unitsofmeasure.org', code: '/d' },
      },
      audit_c_score: {
        code: { system: 'http://loinc.org', code: '75626-2' },
        valueQuantity: {
          value: 0,
          unit: '{score}',
          system: 'http://unitsofmeasure.org',
          code: '{score}',
        },
      },
    });
  });

  it('maps physical activity from the Exercise Vital Sign questionnaire (3 days × 60 minutes)', () => {
    const payload = build(
      recordOf(PATIENT, 'us-core-QuestionnaireResponse-exercise-vital-sign.json'),
    );
    expect(payload.patient_history.physical_activity).toEqual({
      active_days_per_week: {
        code: { system: 'http://loinc.org', code: '89555-7' },
        valueQuantity: {
          value: 3,
          unit: 'd/wk',
          system: 'http://unitsofmeasure.org',
          code: 'd/wk',
        },
      },
      active_minutes_per_day: {
        code: { system: 'http://loinc.org', code: '68516-4' },
        valueQuantity: {
          value: 60,
          unit: 'min/d',
          system: 'http://unitsofmeasure.org',
          code: 'min/d',
        },
      },
      active_minutes_per_week: {
        code: { system: 'http://loinc.org', code: '82290-8' },
        valueQuantity: {
          value: 180,
          unit: 'min/wk',
          system: 'http://unitsofmeasure.org',
          code: 'min/wk',
        },
        derived_from: [
          { system: 'http://loinc.org', code: '89555-7' },
          { system: 'http://loinc.org', code: '68516-4' },
        ],
      },
    });
  });

  it('maps family history to the relative’s RoleCode and the conditions’ codes, nothing else', () => {
    const payload = build(
      recordOf(
        PATIENT,
        'r4-FamilyMemberHistory-father.json',
        'r4-FamilyMemberHistory-mother.json',
        'us-core-familymemberhistory-example.json',
      ),
    );
    const role = (code: string) => ({
      system: 'http://terminology.hl7.org/CodeSystem/v3-RoleCode',
      code,
    });
    const sct = (code: string) => ({ system: 'http://snomed.info/sct', code });
    // In the order of the items' keys (`…/familymemberhistory-example`, `…/father`, `…/mother`).
    expect(payload.patient_history.family_history).toEqual([
      { relationship: role('FTH'), conditions: [sct('709044004')] },
      { relationship: role('FTH'), conditions: [sct('315619001')] },
      { relationship: role('MTH'), conditions: [sct('371041009')] },
    ]);
    const text = JSON.stringify(payload);
    // The father's note, the conditions' texts and displays stay home.
    for (const words of ['fishing', 'Heart Attack', 'Myocardial', 'Stroke', 'father', 'Peter']) {
      expect(text).not.toContain(words);
    }
  });

  it('keeps the coded answers of LOINC questions, never names, dates or free text', () => {
    const payload = build(
      recordOf(
        PATIENT,
        'r4-QuestionnaireResponse-ussg-fht-answers.json',
        'us-core-QuestionnaireResponse-AUDIT-C.json',
      ),
    );
    const answers = payload.patient_history.questionnaire_answers ?? [];
    expect(answers).toContainEqual({
      question: { system: 'http://loinc.org', code: '54136-7' },
      answer: { valueCoding: { system: 'http://loinc.org', code: 'LA10416-8' } },
    });
    expect(answers).toContainEqual({
      question: { system: 'http://loinc.org', code: '68519-8' },
      answer: { valueCoding: { system: 'http://loinc.org', code: 'LA15694-5' } },
    });
    // A relative's age is a number with its unit; each distinct answer once.
    expect(answers).toContainEqual({
      question: { system: 'http://loinc.org', code: '54141-7' },
      answer: {
        valueQuantity: { value: 52, unit: 'a', system: 'http://unitsofmeasure.org', code: 'a' },
      },
    });
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(answers.length);
    // The AUDIT-C total answered on the form is the alcohol score.
    expect(payload.patient_history.alcohol?.audit_c_score?.valueQuantity?.value).toBe(0);
    const text = JSON.stringify(payload);
    for (const planted of ['Annie', 'Proband', 'Susan', 'Brian', 'Lou Gehrigs', '1966-04-04']) {
      expect(text).not.toContain(planted);
    }
  });

  it('caps a relative’s age over 89 at 90', () => {
    const record = applyClinicalChanges(
      recordOf(PATIENT, 'r4-Observation-bmi.json'),
      [
        {
          type: 'upsert',
          item: {
            key: 'fhir:QuestionnaireResponse/ages',
            kind: 'questionnaire',
            source: 'fhir',
            codings: [],
            components: [
              { codings: [{ system: 'http://loinc.org', code: '54141-7' }], value: 96 },
              { codings: [{ system: 'http://loinc.org', code: '54141-7' }], value: 89 },
            ],
          },
        },
      ],
      2,
    ).record;
    const ages = (build(record).patient_history.questionnaire_answers ?? []).map(
      (a) => a.answer.valueQuantity?.value,
    );
    expect(ages.sort()).toEqual([89, 90]);
  });

  it('finds nothing in a questionnaire of uncoded questions and free-text answers', () => {
    const record = recordOf(PATIENT, 'r4-QuestionnaireResponse-f201.json');
    expect(() => build(record)).toThrow(PreventNoDataError);
  });
});

describe('the last check', () => {
  it('refuses a payload that holds an identifier of the patient, and passes the others', () => {
    const record = recordOf(PATIENT, 'r4-Observation-blood-pressure.json');
    expect(() => buildPreventPayload({ clinical: record }, { now: NOW, localId: '107' })).toThrow(
      IdentifierLeakError,
    );
    const payload = build(record);
    const text = JSON.stringify(payload).toLowerCase();
    for (const known of knownIdentifiers(LOCAL_ID, record.patient)) {
      expect(text).not.toContain(known);
    }
  });
});
