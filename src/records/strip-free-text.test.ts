import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.ts';
import { AssembledPatientSchema, type AssembledPatient } from '../interface/assembled-patient.ts';
import { stripFreeText, type FreeTextPolicy } from './strip-free-text.ts';

const ICD = 'http://hl7.org/fhir/sid/icd-10-cm';
const config = loadConfig({ env: {} });
const policy: FreeTextPolicy = {
  metadataAllowedKeys: config.privacy.metadata_allowed_keys,
  identifyingFields: config.privacy.identifying_fields,
};
const MARK = 'PLANTED-FREE-TEXT';

const record = (nodes: object[], extra: object = {}): AssembledPatient =>
  AssembledPatientSchema.parse({ nodes, demographics: { age: 50 }, ...extra });

describe('stripFreeText: displays', () => {
  it('replaces an ICD-10-CM display by the canonical name, with or without the dot', () => {
    const { record: out, removed } = stripFreeText(
      record([
        {
          id: 'n1',
          node_type: 'condition',
          notable: true,
          coding: [
            { system: ICD, code: 'E11.9', display: `${MARK} sugar trouble, seen by Dr X` },
            { system: 'urn:oid:2.16.840.1.113883.6.90', code: 'I10' },
          ],
        },
      ]),
      policy,
    );
    expect(out.nodes[0]?.coding).toEqual([
      { system: ICD, code: 'E11.9', display: 'Type 2 diabetes mellitus without complications' },
      {
        system: 'urn:oid:2.16.840.1.113883.6.90',
        code: 'I10',
        display: 'Essential (primary) hypertension',
      },
    ]);
    expect(removed.display).toBe(1);
  });

  it('replaces a CCSR display by the category description', () => {
    const { record: out } = stripFreeText(
      record([
        {
          id: 'n1',
          node_type: 'condition',
          notable: false,
          coding: [{ system: 'ccsr', code: 'END002', display: MARK }],
        },
      ]),
      policy,
    );
    expect(out.nodes[0]?.coding[0]?.display).toBe('Diabetes mellitus without complication');
  });

  it('drops displays of LOINC, SNOMED CT, unknown systems and unknown ICD-10-CM codes', () => {
    const { record: out, removed } = stripFreeText(
      record([
        {
          id: 'n1',
          node_type: 'observation',
          notable: false,
          service_preferred_name: MARK,
          coding: [
            { system: 'http://loinc.org', code: '4548-4', display: `${MARK} A1c` },
            { system: 'http://snomed.info/sct', code: '44054006', display: MARK },
            { system: 'http://example.org/local', code: 'X1', display: MARK },
            { system: ICD, code: 'Z99.999', display: MARK },
          ],
        },
      ]),
      policy,
    );
    expect(JSON.stringify(out)).not.toContain(MARK);
    expect(out.nodes[0]?.coding).toEqual([
      { system: 'http://loinc.org', code: '4548-4' },
      { system: 'http://snomed.info/sct', code: '44054006' },
      { system: 'http://example.org/local', code: 'X1' },
      { system: ICD, code: 'Z99.999' },
    ]);
    expect(out.nodes[0]).not.toHaveProperty('service_preferred_name');
    expect(removed.display).toBe(5);
  });

  it('does not count a display that already is the canonical name', () => {
    const { removed } = stripFreeText(
      record([
        {
          id: 'n1',
          node_type: 'condition',
          notable: true,
          coding: [{ system: ICD, code: 'I10', display: 'Essential (primary) hypertension' }],
        },
      ]),
      policy,
    );
    expect(removed).toEqual({ display: 0, note: 0, narrative: 0, metadata: 0, field: 0 });
  });
});

describe('stripFreeText: notes, narrative, metadata, unknown fields', () => {
  const noisy = record(
    [
      {
        id: 'n1',
        node_type: 'condition',
        notable: true,
        fhir_id: 'Condition/1',
        service_id: 'C0011860',
        coding: [{ system: ICD, code: 'E11.9', userSelected: true }],
        note: [{ text: `${MARK} note` }],
        text: { status: 'generated', div: `<div>${MARK} narrative</div>` },
        extension: [{ url: 'x', valueString: MARK }],
        metadata: {
          value: 8.1,
          unit: 'mg/dL',
          status: 'active',
          problem_list: true,
          days_before_assembly: 12,
          interpretation: `${MARK} patient says she stopped the pills last week`,
          reference_range: '2024-01-05',
          comment: `${MARK} comment`,
          notes: MARK,
          description: MARK,
          onset: MARK,
          nested: { value: MARK },
          name: MARK,
        },
      },
      { id: 'n2', node_type: 'observation', notable: false, coding: [], metadata: { value: [1] } },
    ],
    {
      relationships: [
        { source_id: 'n2', target_id: 'n1', relationship_type: 'supports' },
        { source_id: 'n1', target_id: 'n2', relationship_type: `${MARK} because of a long story` },
      ],
      demographics: { age: 50, gender: 'female', race: 'White', comment: MARK },
      text: MARK,
      annotation: MARK,
    },
  );
  const { record: out, removed } = stripFreeText(noisy, policy);

  it('leaves none of the planted text, and keeps what the service needs', () => {
    expect(JSON.stringify(out)).not.toContain(MARK);
    expect(out).toEqual({
      nodes: [
        {
          id: 'n1',
          node_type: 'condition',
          notable: true,
          fhir_id: 'Condition/1',
          service_id: 'C0011860',
          coding: [
            {
              system: ICD,
              code: 'E11.9',
              display: 'Type 2 diabetes mellitus without complications',
            },
          ],
          metadata: {
            value: 8.1,
            unit: 'mg/dL',
            status: 'active',
            problem_list: true,
            days_before_assembly: 12,
          },
        },
        { id: 'n2', node_type: 'observation', notable: false, coding: [] },
      ],
      relationships: [
        { source_id: 'n2', target_id: 'n1', relationship_type: 'supports' },
        { source_id: 'n1', target_id: 'n2' },
      ],
      demographics: { age: 50, gender: 'female', race: 'White' },
    });
  });

  it('counts each removal by kind', () => {
    expect(removed).toEqual({
      display: 0,
      // node note, metadata comment and notes, record annotation, demographics comment
      note: 5,
      // node text, metadata description, record text
      narrative: 3,
      // interpretation (a sentence), reference_range (a date), onset, nested, name, n2's value
      metadata: 6,
      // coding userSelected, node extension, relationship_type (a sentence)
      field: 3,
    });
  });

  it('keeps a race of the standard vocabulary however many words it has', () => {
    const { record: kept, removed: counted } = stripFreeText(
      record([], {
        demographics: {
          age: 40,
          gender: 'other',
          race: 'Native Hawaiian or Other Pacific Islander',
        },
      }),
      policy,
    );
    expect(kept.demographics).toEqual({
      age: 40,
      gender: 'other',
      race: 'Native Hawaiian or Other Pacific Islander',
    });
    expect(counted.field).toBe(0);
  });

  it('does not change the record it was given', () => {
    expect(noisy.nodes[0]?.metadata?.comment).toBe(`${MARK} comment`);
    expect(noisy.nodes[0]?.coding[0]).toHaveProperty('userSelected', true);
  });

  it('drops an allowed key the configuration also calls identifying', () => {
    const { record: stripped, removed: counted } = stripFreeText(
      record([
        { id: 'n1', node_type: 'condition', notable: true, coding: [], metadata: { mrn: 'X' } },
      ]),
      { metadataAllowedKeys: ['mrn'], identifyingFields: ['MRN'] },
    );
    expect(stripped.nodes[0]).not.toHaveProperty('metadata');
    expect(counted.metadata).toBe(1);
  });

  it('costs no call stack on a metadata value nested 100,000 deep', () => {
    let deep: unknown = MARK;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    const { record: stripped, removed: counted } = stripFreeText(
      record([
        { id: 'n1', node_type: 'condition', notable: true, coding: [], metadata: { value: deep } },
      ]),
      policy,
    );
    expect(stripped.nodes[0]).not.toHaveProperty('metadata');
    expect(counted.metadata).toBe(1);
  });
});
