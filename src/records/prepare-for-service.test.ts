import { describe, expect, it } from 'vitest';
import type { AssembledPatient } from '../interface/assembled-patient.ts';
import { IdentifierLeakError, prepareForService } from './prepare-for-service.ts';

const base: AssembledPatient = {
  nodes: [
    {
      id: 'n1',
      node_type: 'condition',
      notable: true,
      fhir_id: 'Condition/secret-fhir-1',
      coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9', display: 'T2DM' }],
      metadata: { onset_days_ago: 400, name: 'PLANTED Jane Doe', nested: { SSN: '123-45-6789' } },
    },
  ],
  relationships: [],
  demographics: { age: 61, gender: 'female', race: 'unknown' },
};

const options = {
  localId: 'MRN-PLANTED-9',
  identifyingFields: ['name', 'ssn'],
  opaqueFhirId: (fhirId: string) => Promise.resolve(`ref-${fhirId.length}`),
};

describe('prepareForService', () => {
  it('drops identifying keys at any depth (case-insensitively) and makes FHIR ids opaque', async () => {
    const prepared = await prepareForService(base, options);
    const text = JSON.stringify(prepared);
    expect(text).not.toContain('PLANTED Jane Doe');
    expect(text).not.toContain('123-45-6789');
    expect(text).not.toContain('secret-fhir-1');
    expect(prepared.nodes[0]?.fhir_id).toBe('ref-23');
    expect(prepared.nodes[0]?.metadata).toEqual({ onset_days_ago: 400, nested: {} });
    expect(prepared.nodes[0]?.coding[0]?.code).toBe('E11.9');
    expect(base.nodes[0]?.metadata?.name).toBe('PLANTED Jane Doe');
  });

  it('refuses a payload that still holds the local id anywhere', async () => {
    const leaky = {
      ...base,
      nodes: [{ ...base.nodes[0], id: 'n1', metadata: { note: 'seen as mrn-planted-9 today' } }],
    } as AssembledPatient;
    await expect(prepareForService(leaky, options)).rejects.toBeInstanceOf(IdentifierLeakError);
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
