import { samplePatient } from '../../support/sample-patient.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUTH, JSON_AUTH, startHarness, type Harness } from './support/ingest-harness.ts';

let h: Harness;

beforeEach(async () => {
  h = await startHarness({
    rules: [
      { ccsr_category: 'CIR007' },
      { ccsr_category: 'RSP009', when_changes: ['Observation'] },
    ],
  });
});
afterEach(() => h.close());

const presetUrl = (patientId: string, category: string) =>
  `/v1/patients/${encodeURIComponent(patientId)}/presets/${encodeURIComponent(category)}`;
const put = (patientId: string, category: string) =>
  h.app.inject({ method: 'PUT', url: presetUrl(patientId, category), headers: AUTH });
const del = (patientId: string, category: string) =>
  h.app.inject({ method: 'DELETE', url: presetUrl(patientId, category), headers: AUTH });
const list = (patientId: string) =>
  h.app.inject({
    method: 'GET',
    url: `/v1/patients/${encodeURIComponent(patientId)}/presets`,
    headers: AUTH,
  });

describe('PUT /v1/patients/{patient_id}/presets/{ccsr_category}', () => {
  it('registers a preset (201), then reports it as existing (200) with its first creation time', async () => {
    const created = await put('MRN-1', 'END002');
    expect(created.statusCode).toBe(201);
    const psid = await h.crosswalk.find('MRN-1');
    expect(psid).toBeDefined();
    expect(created.json()).toEqual({
      patient_service_id: psid,
      ccsr_category: 'END002',
      source: 'registered',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const again = await put('MRN-1', 'END002');
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(created.json());
    expect(await h.presets.list(psid as string)).toHaveLength(1);
  });

  it('takes the patient id URL-decoded', async () => {
    expect((await put('MRN/with space', 'END002')).statusCode).toBe(201);
    expect(await h.crosswalk.find('MRN/with space')).toBeDefined();
  });

  it.each([
    ['an unknown category', 'ABC123'],
    ['a placeholder category', 'XXX000'],
    ['another placeholder', 'NoDX1'],
  ])('answers 422 at path.ccsr_category for %s and stores nothing', async (_name, category) => {
    const res = await put('MRN-2', category);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      detail: [{ loc: ['path', 'ccsr_category'], msg: expect.any(String), type: 'custom' }],
    });
    expect(await h.crosswalk.find('MRN-2')).toBeUndefined();
  });

  it('refuses the reserved preset `prevent` while Prevent is off (422), storing nothing; DELETE takes it', async () => {
    const res = await put('MRN-3', 'prevent');
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      detail: [
        {
          loc: ['path', 'ccsr_category'],
          msg: expect.stringContaining('Prevent is off'),
          type: 'custom',
        },
      ],
    });
    expect(await h.crosswalk.find('MRN-3')).toBeUndefined();
    // Not a 422: a preset registered while Prevent was on can still go.
    expect((await del('MRN-3', 'prevent')).statusCode).toBe(404);
  });

  it('answers 400 {detail} for a path that does not URL-decode', async () => {
    const res = await h.app.inject({
      method: 'PUT',
      url: '/v1/patients/MRN-%E0%A4%A/presets/END002',
      headers: AUTH,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: 'malformed URL' });
    expect(await h.newKeys()).toEqual([]);
  });

  it('answers 422 at path.patient_id for an id over 128 characters', async () => {
    const res = await put('x'.repeat(129), 'END002');
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0].loc).toEqual(['path', 'patient_id']);
    expect((await put('x'.repeat(128), 'END002')).statusCode).toBe(201);
  });
});

describe('DELETE /v1/patients/{patient_id}/presets/{ccsr_category}', () => {
  it('removes a preset (204), then answers 404', async () => {
    await put('MRN-3', 'END002');
    const removed = await del('MRN-3', 'END002');
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    const psid = (await h.crosswalk.find('MRN-3')) as string;
    expect(await h.presets.list(psid)).toEqual([]);
    const gone = await del('MRN-3', 'END002');
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toEqual({ detail: expect.any(String) });
  });

  it('answers 404 for a patient never seen, without creating a crosswalk entry', async () => {
    const res = await del('MRN-NEVER', 'END002');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'unknown patient' });
    expect(await h.crosswalk.find('MRN-NEVER')).toBeUndefined();
    expect(await h.newKeys()).toEqual([]);
  });
});

describe('GET /v1/patients/{patient_id}/presets', () => {
  it('lists registered presets and every rule, each with its source', async () => {
    await put('MRN-4', 'END002');
    await put('MRN-4', 'END005');
    const res = await list('MRN-4');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      patient_service_id: await h.crosswalk.find('MRN-4'),
      presets: [
        { ccsr_category: 'END002', source: 'registered', created_at: expect.any(String) },
        { ccsr_category: 'END005', source: 'registered', created_at: expect.any(String) },
        { ccsr_category: 'CIR007', source: 'rule' },
        { ccsr_category: 'RSP009', source: 'rule', when_changes: ['Observation'] },
      ],
    });
  });

  it('lists only rules for a patient known from a record update', async () => {
    await h.app.inject({
      method: 'POST',
      url: '/v1/record-updates',
      headers: JSON_AUTH,
      payload: {
        patient_id: 'MRN-5',
        assembled_patient: samplePatient,
        ccsr_categories: ['END002'],
      },
    });
    const res = await list('MRN-5');
    expect(res.statusCode).toBe(200);
    expect(res.json().presets.map((p: { source: string }) => p.source)).toEqual(['rule', 'rule']);
  });

  it('answers 404 unknown patient for a patient never seen, storing nothing', async () => {
    const res = await list('MRN-NEVER');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'unknown patient' });
    expect(await h.newKeys()).toEqual([]);
  });

  it('lets registered presets drive the next record update', async () => {
    await put('MRN-6', 'END002');
    await del('MRN-6', 'END002');
    await put('MRN-6', 'END005');
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/record-updates',
      headers: JSON_AUTH,
      payload: {
        patient_id: 'MRN-6',
        assembled_patient: { nodes: [], demographics: { age: 40 } },
      },
    });
    expect(res.statusCode).toBe(202);
    expect(res.json().queries.map((q: { ccsr_category: string }) => q.ccsr_category)).toEqual([
      'END005',
      'CIR007',
    ]);
  });
});
