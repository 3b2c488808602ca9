import { afterAll, describe, expect, it } from 'vitest';
import { admin, auth, call, testApp } from './simulator-fixtures.ts';

const app = testApp();
afterAll(() => app.close());

const register = (identifier: unknown) =>
  call(app, {
    method: 'POST',
    url: '/v1/patient',
    headers: auth,
    payload: { unique_patient_identifier: identifier },
  });
const prevent = (id: string, body: object) =>
  call(app, { method: 'POST', url: `/v1/patient/${id}`, headers: auth, payload: body });
const request = (id: string) => ({
  patient_service_id: id,
  patient_biomarkers: { bmi: 33, hba1c: 6.1 },
  patient_history: { tobacco_use: 'current' },
  patient_demographics: { age: 47 },
});

describe('POST /v1/patient', () => {
  it('answers 201 for a new identifier and 200 with the same id after', async () => {
    const first = await register('MRN-0001');
    expect(first).toMatchObject({ status: 201, body: { patient_service_id: expect.any(String) } });
    const again = await register('MRN-0001');
    expect(again).toMatchObject({ status: 200, body: first.body as object });
    const other = await register('MRN-0002');
    expect(other.body).not.toEqual(first.body);
  });

  it('answers 422 at body.unique_patient_identifier to a bad body', async () => {
    expect(await register('')).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'unique_patient_identifier'] }] },
    });
    expect(await register(42)).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'unique_patient_identifier'] }] },
    });
  });

  it('keeps the identifier out of the request log', async () => {
    await register('MRN-SECRET-7');
    const log = await call(app, { url: '/_admin/requests', headers: admin });
    expect(JSON.stringify(log.body)).not.toContain('MRN-SECRET-7');
    expect(log.body).toContainEqual(
      expect.objectContaining({
        path: '/v1/patient',
        body: { unique_patient_identifier: '[redacted]' },
      }),
    );
  });
});

describe('POST /v1/patient/{patient_service_id}', () => {
  it('answers 200 with ranked recommendations citing existing relationships', async () => {
    const id = ((await register('MRN-0100')).body as { patient_service_id: string })
      .patient_service_id;
    const res = await prevent(id, request(id));
    expect(res.status).toBe(200);
    const body = res.body as {
      patient_service_id: string;
      recommendations: {
        rank: number;
        factor: string;
        relationship_ids: string[];
        evidence: object;
      }[];
    };
    expect(body.patient_service_id).toBe(id);
    expect(body.recommendations.map((r) => r.rank)).toEqual([1, 2, 3, 4, 5]);
    expect(
      body.recommendations
        .slice(0, 3)
        .map((r) => r.factor)
        .sort(),
    ).toEqual(['blood_glucose', 'smoking', 'weight']);
    for (const r of body.recommendations) {
      expect(r.evidence).toMatchObject({ simulated: true });
      for (const rel of r.relationship_ids) {
        expect((await call(app, { url: `/v1/relationships/${rel}`, headers: auth })).status).toBe(
          200,
        );
      }
    }
    expect((await prevent(id, request(id))).body).toEqual(res.body);
  });

  it('answers 404 to an unknown patient_service_id', async () => {
    expect(await prevent('not-registered', request('not-registered'))).toMatchObject({
      status: 404,
      body: { detail: 'Patient not found' },
    });
  });

  it('answers 422 to a bad body, and when the body names another patient', async () => {
    const id = ((await register('MRN-0200')).body as { patient_service_id: string })
      .patient_service_id;
    // undefined leaves the field out of the JSON body.
    const missing = { ...request(id), patient_biomarkers: undefined };
    expect(await prevent(id, missing)).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'patient_biomarkers'] }] },
    });
    expect(await prevent(id, { ...request(id), patient_history: 'none' })).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'patient_history'] }] },
    });
    expect(await prevent(id, request('someone-else'))).toMatchObject({
      status: 422,
      body: {
        detail: [
          {
            loc: ['body', 'patient_service_id'],
            msg: expect.any(String),
            type: expect.any(String),
          },
        ],
      },
    });
  });

  it('answers 422 at path.patient_service_id to an over-long id', async () => {
    const long = 'p'.repeat(200);
    expect(await prevent(long, request(long))).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['path', 'patient_service_id'] }] },
    });
  });
});
