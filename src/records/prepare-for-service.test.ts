import { describe, expect, it } from 'vitest';
import type { AssembledPatient } from '../interface/assembled-patient.ts';
import { PatientIdentityFacetsSchema } from './clinical-record.ts';
import { knownIdentifiers } from './known-identifiers.ts';
import { IdentifierLeakError, prepareForService } from './prepare-for-service.ts';

const base: AssembledPatient = {
  nodes: [
    {
      id: 'n1',
      node_type: 'condition',
      notable: true,
      fhir_id: 'Condition/secret-fhir-1',
      coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9', display: 'T2DM' }],
      metadata: {
        days_before_assembly: 400,
        name: 'PLANTED Jane Doe',
        nested: { SSN: '123-45-6789' },
        note: 'PLANTED note: called her daughter',
      },
    },
  ],
  relationships: [],
  demographics: { age: 61, gender: 'female', race: 'unknown' },
};

const options = {
  localId: 'MRN-PLANTED-9',
  identifyingFields: ['name', 'ssn'],
  metadataAllowedKeys: ['value', 'unit', 'status', 'days_before_assembly', 'problem_list', 'name'],
  opaqueFhirId: (fhirId: string) => Promise.resolve(`ref-${fhirId.length}`),
};

describe('prepareForService', () => {
  it('drops identifying keys (even allowed ones), free text and nesting; makes FHIR ids opaque', async () => {
    const removed: [string, number][] = [];
    const prepared = await prepareForService(base, {
      ...options,
      onRemoved: (kind, n) => removed.push([kind, n]),
    });
    const text = JSON.stringify(prepared);
    for (const planted of ['PLANTED', '123-45-6789', 'secret-fhir-1', 'T2DM']) {
      expect(text).not.toContain(planted);
    }
    expect(prepared.nodes[0]?.fhir_id).toBe('ref-23');
    expect(prepared.nodes[0]?.metadata).toEqual({ days_before_assembly: 400 });
    expect(prepared.nodes[0]?.coding[0]).toEqual({
      system: 'http://hl7.org/fhir/sid/icd-10-cm',
      code: 'E11.9',
      display: 'Type 2 diabetes mellitus without complications',
    });
    // display: T2DM; metadata: name, nested; note: note. Each kind once, never with the text.
    expect(removed).toEqual([
      ['display', 1],
      ['note', 1],
      ['metadata', 2],
    ]);
    expect(base.nodes[0]?.metadata?.name).toBe('PLANTED Jane Doe');
  });

  it('does not call onRemoved when nothing was removed', async () => {
    const clean = {
      ...base,
      nodes: [{ ...base.nodes[0], coding: [{ system: 'http://loinc.org', code: '4548-4' }] }],
    } as AssembledPatient;
    const removed: string[] = [];
    await prepareForService(clean, { ...options, onRemoved: (kind) => removed.push(kind) });
    expect(removed).toEqual(['note', 'metadata']);
    const bare = {
      ...clean,
      nodes: [{ ...clean.nodes[0], metadata: { value: 3 } }],
    } as AssembledPatient;
    removed.length = 0;
    await prepareForService(bare, { ...options, onRemoved: (kind) => removed.push(kind) });
    expect(removed).toEqual([]);
  });

  it('refuses a payload that still holds the local id in what is sent', async () => {
    const leaky = {
      ...base,
      nodes: [{ ...base.nodes[0], id: 'n1', metadata: { value: 'mrn-planted-9' } }],
    } as AssembledPatient;
    await expect(prepareForService(leaky, options)).rejects.toBeInstanceOf(IdentifierLeakError);
    const inCode = {
      ...base,
      nodes: [{ ...base.nodes[0], coding: [{ system: 'x', code: 'MRN-PLANTED-9' }] }],
    } as AssembledPatient;
    await expect(prepareForService(inCode, options)).rejects.toBeInstanceOf(IdentifierLeakError);
  });

  it('removes a note holding the local id instead of refusing the payload', async () => {
    const noted = {
      ...base,
      nodes: [{ ...base.nodes[0], note: 'seen as mrn-planted-9 today' }],
    } as AssembledPatient;
    const prepared = await prepareForService(noted, options);
    expect(JSON.stringify(prepared).toLowerCase()).not.toContain('mrn-planted-9');
  });

  it('matches a short id only as a whole value, not inside numbers or words', async () => {
    const prepared = await prepareForService(base, { ...options, localId: '40' });
    expect(prepared.nodes).toHaveLength(1);
    const leaky = { ...base, demographics: { age: 40 } } as AssembledPatient;
    await expect(prepareForService(leaky, { ...options, localId: '40' })).rejects.toThrow(
      IdentifierLeakError,
    );
  });
});

describe('prepareForService: knownIdentifiers', () => {
  const facets = PatientIdentityFacetsSchema.parse({
    birthDate: '1957-08-19',
    gender: 'female',
    race: ['White'],
    names: ['White^Janet^Q'],
    identifiers: ['MRN-PLANT-4471', '4548', '999-88-7777'],
    phones: ['(555) 867-5309'],
    emails: ['janet.white@example.org'],
    addresses: ['42 Larkspur Road^^Springfield^IL^44054'],
  });
  const known = knownIdentifiers('LOCAL-31', facets);

  /** A typical payload: codes, numbers and days that must not collide with the ids above. */
  const clean: AssembledPatient = {
    nodes: [
      {
        id: 'n1',
        node_type: 'observation',
        notable: true,
        coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' }],
        metadata: { value: 8.1, unit: '%', reference_range: '4.0-5.6', days_before_assembly: 4547 },
      },
      {
        id: 'n2',
        node_type: 'condition',
        notable: true,
        fhir_id: 'Condition/c1',
        coding: [
          { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9', display: 'T2DM' },
          {
            system: 'http://snomed.info/sct',
            code: '44054006',
            display: 'Diabetes mellitus type 2',
          },
        ],
        metadata: { status: 'active', problem_list: true, days_before_assembly: 45480 },
      },
      {
        id: 'n3',
        node_type: 'intervention',
        notable: false,
        coding: [
          { system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '860975' },
          { system: 'http://snomed.info/sct', code: '1145480001' },
          { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'Z45.48' },
        ],
        metadata: { intervention_type: 'medication', value: 14548 },
      },
    ],
    relationships: [],
    demographics: { age: 68, gender: 'female', race: 'White' },
  };
  const prepare = (record: AssembledPatient) =>
    prepareForService(record, { ...options, localId: 'LOCAL-31', knownIdentifiers: known });

  /**
   * `clean` with `value` planted where it is sent as given: a string as the code of an extra
   * coding of the first node (codes are never altered), anything else as its metadata `value`.
   */
  const planted = (value: unknown): AssembledPatient => ({
    ...clean,
    nodes: clean.nodes.map((node, i) =>
      i !== 0
        ? node
        : typeof value === 'string'
          ? { ...node, coding: [...node.coding, { system: 'urn:local', code: value }] }
          : { ...node, metadata: { value } },
    ),
  });

  it('accepts a clean payload with typical codes and numbers', async () => {
    const prepared = await prepare(clean);
    expect(prepared.nodes).toHaveLength(3);
    expect(prepared.demographics.race).toBe('White');
  });

  it.each([
    ['the whole name', 'WHITE^JANET^Q'],
    ['a name part', 'seen with Janet'],
    ['the MRN', 'ref mrn-plant-4471'],
    ['a 4-digit MRN standing alone', 'chart 4548.'],
    ['a 4-digit MRN as a whole value', '4548'],
    ['the SSN as given', 'ssn 999-88-7777'],
    ['the SSN as digits', '999887777'],
    ['the birth date YYYY-MM-DD', 'dob 1957-08-19'],
    ['the birth date YYYYMMDD', '19570819'],
    ['the birth date MM/DD/YYYY', '08/19/1957'],
    ['the birth date DD/MM/YYYY', '19/08/1957'],
    ['the phone as given', 'call (555) 867-5309'],
    ['the phone digits, other punctuation', '555.867.5309'],
    ['the phone digits, bare', '+15558675309'],
    ['the email', 'JANET.WHITE@example.org'],
    ['an address line', '42 larkspur road'],
    ['the city', 'Springfield'],
    ['the zip code', 'zip 44054'],
    ['the local id', 'local-31'],
  ])('refuses %s, without the value in the error', async (_form, value) => {
    const error = await prepare(planted(value)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdentifierLeakError);
    expect((error as IdentifierLeakError).code).toBe('ERR_IDENTIFIER_LEAK');
    expect((error as Error).message).not.toContain(value);
    expect((error as Error).message.toLowerCase()).not.toMatch(/janet|white|4548|555|1957/);
  });

  it('removes an identifier used as a metadata key; refuses a numeric identifier as a number', async () => {
    const keyed = {
      ...clean,
      nodes: clean.nodes.map((node, i) => (i === 0 ? { ...node, metadata: { Janet: 1 } } : node)),
    };
    const prepared = await prepare(keyed);
    expect(JSON.stringify(prepared).toLowerCase()).not.toContain('janet');
    await expect(prepare(planted(4548))).rejects.toThrow(IdentifierLeakError);
    await expect(prepare(planted(5558675309))).rejects.toThrow(IdentifierLeakError);
  });

  it('does not refuse a canonical name that shares a word with the patient name', async () => {
    const essential = knownIdentifiers('LOCAL-31', { ...facets, names: ['Essential^Mary'] });
    const hypertension: AssembledPatient = {
      ...clean,
      nodes: [
        {
          id: 'n1',
          node_type: 'condition',
          notable: true,
          coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'I10' }],
        },
      ],
    };
    const prepared = await prepareForService(hypertension, {
      ...options,
      localId: 'LOCAL-31',
      knownIdentifiers: essential,
    });
    expect(prepared.nodes[0]?.coding[0]?.display).toBe('Essential (primary) hypertension');
    // The same word sent by the sender, where it is not a canonical name, is still refused.
    const sent = {
      ...hypertension,
      nodes: [{ ...hypertension.nodes[0], metadata: { value: 'essential' } }],
    } as AssembledPatient;
    await expect(
      prepareForService(sent, { ...options, localId: 'LOCAL-31', knownIdentifiers: essential }),
    ).rejects.toThrow(IdentifierLeakError);
  });

  it('refuses a name in the race field when race is not a known category', async () => {
    const leaky = { ...clean, demographics: { age: 68, race: 'Janet White' } };
    await expect(prepare(leaky)).rejects.toThrow(IdentifierLeakError);
    const surname = { ...clean, demographics: { age: 68, race: 'white' } };
    await expect(prepare(surname)).resolves.toMatchObject({ demographics: { race: 'white' } });
  });

  it('does not let a short numeric id hide inside codes or longer numbers', async () => {
    for (const value of ['4548-4', '14548', '4548.5', 'Z4548', '1.4548', '45481']) {
      await expect(prepare(planted(value))).resolves.toBeDefined();
    }
    await expect(prepare(planted('MRN 4548-'))).rejects.toThrow(IdentifierLeakError);
  });

  it('matches ids of fewer than 4 characters only as whole values', async () => {
    const short = { ...options, localId: 'LOCAL-31', knownIdentifiers: ['Li', '7'] };

    await expect(prepareForService(planted('Lithium, Li-ion'), short)).resolves.toBeDefined();
    await expect(prepareForService(planted(' li '), short)).rejects.toThrow(IdentifierLeakError);
    await expect(prepareForService(planted(7), short)).rejects.toThrow(IdentifierLeakError);
    await expect(prepareForService(planted(17), short)).resolves.toBeDefined();
  });
});
