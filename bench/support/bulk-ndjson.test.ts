import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ccsrCategoriesForIcd10 } from '../../src/ccsr/icd10-ccsr-map.ts';
import {
  MAPPED_TYPES,
  mapClinicalResource,
  parsePatient,
} from '../../src/ingest/fhir/map-resource.ts';
import { patientIdOf } from '../../src/import/resource-patient.ts';
import {
  ICD10_CM,
  patientId,
  PROBLEMS,
  RESOURCES_PER_PATIENT,
  writeBulkNdjson,
} from './bulk-ndjson.ts';

const folder = mkdtempSync(join(os.tmpdir(), 'cw-bulk-ndjson-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const linesOf = (name: string) =>
  readFileSync(join(folder, name), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown> & { resourceType: string });

describe('writeBulkNdjson', () => {
  const patients = 600; // more than one write of 256 patients per file

  it('writes one file per type, nine resources per patient', async () => {
    const written = await writeBulkNdjson(folder, patients);
    expect(written.resources).toEqual({
      Patient: patients,
      Condition: patients * 3,
      Observation: patients * 4,
      Encounter: patients,
    });
    expect(written.total_resources).toBe(patients * RESOURCES_PER_PATIENT);
    expect(RESOURCES_PER_PATIENT).toBe(9);
    for (const [type, count] of Object.entries(written.resources)) {
      const lines = linesOf(`${type}.ndjson`);
      expect(lines).toHaveLength(count);
      expect(new Set(lines.map((r) => r['id'])).size).toBe(count);
      expect(lines.every((r) => r.resourceType === type)).toBe(true);
    }
  });

  it('writes resources the FHIR feed maps, each naming its patient', () => {
    for (const type of ['Condition', 'Observation']) {
      linesOf(`${type}.ndjson`).forEach((resource, line) => {
        const mapped = mapClinicalResource(resource as typeof resource & { id: string }, [line]);
        expect(mapped?.change.type).toBe('upsert');
        expect(patientIdOf(resource)).toMatch(/^bulk-\d{7}$/);
      });
    }
    const first = linesOf('Patient.ndjson')[0];
    expect(parsePatient(first, [0]).birthDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(patientIdOf(first ?? {})).toBe(patientId(0));
    expect(MAPPED_TYPES.has('Encounter')).toBe(false);
  });

  it('gives each patient three active problems whose ICD-10-CM codes map to CCSR categories', () => {
    for (const problem of PROBLEMS) {
      expect(ccsrCategoriesForIcd10(problem.code, 'all').length).toBeGreaterThan(0);
    }
    const byPatient = new Map<string, string[]>();
    for (const condition of linesOf('Condition.ndjson')) {
      const coding = (condition['code'] as { coding: { system: string; code: string }[] })
        .coding[0];
      expect(coding?.system).toBe(ICD10_CM);
      const status = condition['clinicalStatus'] as { coding: { code: string }[] };
      expect(status.coding[0]?.code).toBe('active');
      const id = patientIdOf(condition) ?? '';
      byPatient.set(id, [...(byPatient.get(id) ?? []), coding?.code ?? '']);
    }
    expect(byPatient.size).toBe(patients);
    for (const codes of byPatient.values()) expect(new Set(codes).size).toBe(3);
  });
});
