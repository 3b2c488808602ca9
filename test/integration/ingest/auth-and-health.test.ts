import { afterEach, describe, expect, it } from 'vitest';
import {
  AUTH,
  JSON_AUTH,
  OTHER_TOKEN,
  TOKEN,
  startHarness,
  type Harness,
} from './support/ingest-harness.ts';
import { samplePatient } from '../../support/sample-patient.ts';

let h: Harness;
afterEach(() => h.close());

const protectedRoutes = [
  { method: 'POST', url: '/v1/record-updates' },
  { method: 'PUT', url: '/v1/patients/MRN-1/presets/END002' },
  { method: 'DELETE', url: '/v1/patients/MRN-1/presets/END002' },
  { method: 'GET', url: '/v1/patients/MRN-1/presets' },
  { method: 'GET', url: '/v1/no-such-route' },
] as const;

describe('bearer authentication', () => {
  it.each([
    ['no Authorization header', {}],
    ['another scheme', { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` }],
    ['an unknown token', { authorization: 'Bearer not-a-configured-token-000' }],
    ['a prefix of a token', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
  ])(
    'answers 401 with WWW-Authenticate for %s, before reading the body',
    async (_name, headers) => {
      h = await startHarness();
      for (const route of protectedRoutes) {
        const res = await h.app.inject({
          ...route,
          headers: { ...headers, 'content-type': 'application/json' },
          payload: JSON.stringify({ patient_id: 'MRN-1', assembled_patient: samplePatient }),
        });
        expect(res.statusCode, `${route.method} ${route.url}`).toBe(401);
        expect(res.headers['www-authenticate']).toBe('Bearer');
        expect(res.json()).toEqual({ detail: expect.any(String) });
      }
      expect(await h.newKeys()).toEqual([]);
    },
  );

  it('accepts each configured token', async () => {
    h = await startHarness();
    for (const token of [TOKEN, OTHER_TOKEN]) {
      const res = await h.app.inject({
        method: 'PUT',
        url: '/v1/patients/MRN-1/presets/END002',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.statusCode).toBeLessThan(300);
    }
  });

  it('answers 401 on every protected route when no token is configured', async () => {
    h = await startHarness({ tokens: [] });
    for (const token of [TOKEN, '']) {
      const res = await h.app.inject({
        method: 'GET',
        url: '/v1/patients/MRN-1/presets',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.statusCode).toBe(401);
    }
    expect((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('answers 404 {detail} for an unknown route once authenticated', async () => {
    h = await startHarness();
    const res = await h.app.inject({ method: 'GET', url: '/v1/no-such-route', headers: AUTH });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'Not Found' });
  });
});

describe('health, readiness and metrics', () => {
  it('answers /healthz and /readyz without a token', async () => {
    h = await startHarness();
    const health = await h.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
  });

  it('serves the ingest counters as Prometheus text without a token', async () => {
    h = await startHarness();
    await h.app.inject({
      method: 'POST',
      url: '/v1/record-updates',
      headers: JSON_AUTH,
      payload: {
        patient_id: 'MRN-1',
        source: 'mirth',
        assembled_patient: samplePatient,
        ccsr_categories: ['END002'],
      },
    });
    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toContain('# HELP cw_ingest_events_total ');
    expect(res.body).toContain('cw_ingest_events_total{source="mirth",outcome="accepted"} 1');
    expect(res.body).toContain('# HELP cw_queries_enqueued_total ');
    expect(res.body).toContain('cw_queries_enqueued_total{kind="new"} 1');
  });

  it('builds a registry with the default process metrics when none is passed', async () => {
    h = await startHarness({ defaultRegistry: true });
    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('process_cpu_user_seconds_total');
    expect(res.body).toContain('# HELP cw_ingest_events_total ');
  });
});
