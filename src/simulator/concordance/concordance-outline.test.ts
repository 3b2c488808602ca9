import { describe, expect, it } from 'vitest';
import { loadCcsrTables } from '../../ccsr/ccsr-tables.ts';
import {
  AssembledPatientSchema,
  type AssembledPatient,
} from '../../interface/assembled-patient.ts';
import { outlineConcordance, recommendationCount } from './concordance-outline.ts';

const tables = loadCcsrTables();
const hypertension = tables.category('CIR007');
if (hypertension === undefined) throw new Error('CIR007 missing from the CCSR tables');

const patient = (nodes: object[], relationships: object[] = [], age = 60): AssembledPatient =>
  AssembledPatientSchema.parse({ nodes, relationships, demographics: { age } });

const condition = {
  id: 'c1',
  node_type: 'condition',
  notable: true,
  coding: [
    {
      system: 'http://hl7.org/fhir/sid/icd-10-cm',
      code: 'I10',
      display: 'Essential (primary) hypertension',
    },
  ],
};
const observation = {
  id: 'o1',
  node_type: 'observation',
  notable: false,
  coding: [{ system: 'loinc', code: '8480-6', display: 'Systolic blood pressure' }],
};
const intervention = {
  id: 'i1',
  node_type: 'intervention',
  notable: false,
  service_preferred_name: 'Lisinopril',
};

describe('outlineConcordance', () => {
  it('answers insufficient_data everywhere when no node matches the category', () => {
    const outline = outlineConcordance(patient([observation]), hypertension);
    expect(outline.verdicts.length).toBe(recommendationCount('CIR007'));
    expect(
      outline.verdicts.every((v) => v.verdict === 'insufficient_data' && v.nodeIds.length === 0),
    ).toBe(true);
    expect(outline.flags).toEqual(['no_matching_nodes']);
  });

  it('is concordant where linked observations and interventions exist', () => {
    const outline = outlineConcordance(
      patient(
        [condition, observation, intervention],
        [
          { source_id: 'c1', target_id: 'o1' },
          { source_id: 'i1', target_id: 'c1' },
        ],
      ),
      hypertension,
    );
    expect(outline.verdicts[0]).toEqual({ verdict: 'concordant', nodeIds: ['c1'] });
    expect(outline.verdicts[1]).toEqual({ verdict: 'concordant', nodeIds: ['o1'] });
    if (outline.verdicts.length === 3) {
      expect(outline.verdicts[2]).toEqual({ verdict: 'concordant', nodeIds: ['i1'] });
    }
    expect(outline.flags).toEqual(['notable_nodes_cited']);
  });

  it('is discordant, citing the condition, when the record lacks the follow-up', () => {
    const outline = outlineConcordance(
      patient([condition, { ...observation, coding: [] }], [], 90),
      hypertension,
    );
    expect(outline.verdicts[1]).toEqual({ verdict: 'discordant', nodeIds: ['c1'] });
    expect(outline.flags).toContain('discordance_found');
    expect(outline.flags).toContain('age_capped_at_90');
  });

  it('matches a condition by its ICD-10-CM code through the CCSR table, without any display', () => {
    const bare = {
      ...condition,
      coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'I10' }],
    };
    const outline = outlineConcordance(patient([bare]), hypertension);
    expect(outline.verdicts[0]).toEqual({ verdict: 'concordant', nodeIds: ['c1'] });
    expect(outline.flags).not.toContain('no_matching_nodes');
    // E11.9 maps to END002 (its default) and END005: it bears on both, and not on CIR007.
    const diabetes = {
      ...condition,
      coding: [{ system: 'urn:oid:2.16.840.1.113883.6.90', code: 'e119' }],
    };
    for (const code of ['END002', 'END005']) {
      const category = tables.category(code);
      if (category === undefined) throw new Error(`${code} missing`);
      expect(outlineConcordance(patient([diabetes]), category).verdicts[0]?.verdict).toBe(
        'concordant',
      );
    }
    expect(outlineConcordance(patient([diabetes]), hypertension).flags).toContain(
      'no_matching_nodes',
    );
  });

  it('does not match by display words, names, or an ICD-10-CM code under another system', () => {
    const byWords = {
      ...condition,
      service_preferred_name: 'Essential hypertension',
      coding: [
        { system: 'http://snomed.info/sct', code: '59621000', display: 'Essential hypertension' },
        { system: 'http://example.org/local', code: 'I10' },
      ],
    };
    const outline = outlineConcordance(patient([byWords]), hypertension);
    expect(outline.flags).toContain('no_matching_nodes');
    expect(outline.verdicts.every((v) => v.verdict === 'insufficient_data')).toBe(true);
  });

  it('matches a coding that carries the CCSR code itself', () => {
    const ccsrCoded = {
      id: 'x',
      node_type: 'condition',
      notable: false,
      coding: [{ system: 'ccsr', code: 'CIR007' }],
    };
    expect(outlineConcordance(patient([ccsrCoded]), hypertension).verdicts[0]?.verdict).toBe(
      'concordant',
    );
  });

  it('cites at most five nodes per recommendation', () => {
    const many = Array.from({ length: 8 }, (_, i) => ({ ...condition, id: `c${i}` }));
    expect(outlineConcordance(patient(many), hypertension).verdicts[0]?.nodeIds).toEqual([
      'c0',
      'c1',
      'c2',
      'c3',
      'c4',
    ]);
  });
});
