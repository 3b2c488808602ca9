import { afterEach, describe, expect, it } from 'vitest';
import { AUTH, JSON_AUTH, startHarness, type Harness } from './support/ingest-harness.ts';
import { samplePatient } from '../../support/sample-patient.ts';

let h: Harness;
afterEach(() => h.close());

/** Nothing listens on port 1: every connection attempt is refused. */
const CLOSED_PORT = 'redis://127.0.0.1:1';

function expect503(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) {
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe('5');
  expect(res.json()).toEqual({ detail: expect.any(String) });
}

const update = (body: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/v1/record-updates', headers: JSON_AUTH, payload: body });

describe('Redis unreachable', () => {
  it('answers 503 with Retry-After on every route that needs Redis, and /readyz 503', async () => {
    h = await startHarness({ redisUrl: CLOSED_PORT });
    expect503(
      await update({ patient_id: 'MRN-1', event_id: 'e-1', assembled_patient: samplePatient }),
    );
    expect503(
      await update({ patient_id: 'MRN-1', source: 'mirth', assembled_patient: samplePatient }),
    );
    for (const method of ['PUT', 'DELETE'] as const) {
      expect503(
        await h.app.inject({ method, url: '/v1/patients/MRN-1/presets/END002', headers: AUTH }),
      );
    }
    expect503(
      await h.app.inject({ method: 'GET', url: '/v1/patients/MRN-1/presets', headers: AUTH }),
    );
    expect503(await h.app.inject({ method: 'GET', url: '/readyz' }));
    // Liveness does not depend on Redis: restarting the process would not bring it back.
    expect((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const metrics = await h.registry.getSingleMetricAsString('cw_ingest_events_total');
    expect(metrics).toContain('cw_ingest_events_total{source="mirth",outcome="unavailable"} 1');
    expect(metrics).toContain('cw_ingest_events_total{source="none",outcome="unavailable"} 1');
    // Validation needs no Redis: a bad body is still a 422, not a 503.
    expect((await update({ patient_id: '' })).statusCode).toBe(422);
  });

  it('answers 503 once a working connection is lost', async () => {
    h = await startHarness();
    expect(
      (await update({ patient_id: 'MRN-2', assembled_patient: samplePatient })).statusCode,
    ).toBe(202);
    h.redis.disconnect();
    expect503(await update({ patient_id: 'MRN-2', assembled_patient: samplePatient }));
    expect503(await h.app.inject({ method: 'GET', url: '/readyz' }));
  });

  it('answers a batch 503, counting each of its items unavailable', async () => {
    h = await startHarness({ redisUrl: CLOSED_PORT });
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/record-updates/batch',
      headers: JSON_AUTH,
      payload: [
        { patient_id: 'MRN-1', source: 'replay', assembled_patient: samplePatient },
        { patient_id: 'MRN-2', source: 'replay', assembled_patient: samplePatient },
      ],
    });
    expect503(res);
    const metrics = await h.registry.getSingleMetricAsString('cw_ingest_events_total');
    expect(metrics).toContain('cw_ingest_events_total{source="replay",outcome="unavailable"} 2');
  });

  it('names the request in its warning when info lines are off (no child logger per request)', async () => {
    h = await startHarness({ redisUrl: CLOSED_PORT, logLevel: 'warn' });
    expect503(await update({ patient_id: 'MRN-1', assembled_patient: samplePatient }));
    const warnings = h.logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(warnings).toContainEqual(
      expect.objectContaining({ level: 40, msg: 'redis unavailable', reqId: expect.any(String) }),
    );
  });
});
