import { afterEach, describe, expect, it } from 'vitest';
import { AUTH, startHarness, type Harness } from '../ingest/support/ingest-harness.ts';

const ADMIN_A = 'admin-token-a-0123456789abcdef';
const ADMIN_B = 'admin-token-b-0123456789abcdef';
const LOCAL = 'MRN-ROUTE-PLANTED-9d2c';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const start = async (adminTokens = [ADMIN_A, ADMIN_B]) => (h = await startHarness({ adminTokens }));
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const patientUrl = (id: string) => `/v1/patients/${encodeURIComponent(id)}`;
const call = (
  harness: Harness,
  method: 'PUT' | 'DELETE',
  url: string,
  headers: Record<string, string> = {},
) => harness.app.inject({ method, url, headers });

const ROUTES: ['PUT' | 'DELETE', string][] = [
  ['DELETE', patientUrl(LOCAL)],
  ['PUT', `${patientUrl(LOCAL)}/opt-out`],
  ['DELETE', `${patientUrl(LOCAL)}/opt-out`],
];

describe('patient administration routes: authentication', () => {
  it.each(ROUTES)(
    '%s %s: 401 without a token or with an unknown one, 403 with an ingest token; nothing changes',
    async (method, url) => {
      const harness = await start();
      const none = await call(harness, method, url);
      expect(none.statusCode).toBe(401);
      expect(none.headers['www-authenticate']).toBe('Bearer');
      expect((await call(harness, method, url, bearer('not-a-token-0123456789'))).statusCode).toBe(
        401,
      );
      const ingest = await call(harness, method, url, AUTH);
      expect(ingest.statusCode).toBe(403);
      expect(ingest.json()).toEqual({
        detail: 'this token may not administer patients: use one of ADMIN_TOKENS',
      });
      expect(await harness.newKeys()).toEqual([]);
    },
  );

  it('an admin token is no ingest token', async () => {
    const harness = await start();
    const res = await harness.app.inject({
      method: 'GET',
      url: `${patientUrl(LOCAL)}/presets`,
      headers: bearer(ADMIN_A),
    });
    expect(res.statusCode).toBe(401);
  });

  it('without ADMIN_TOKENS nobody may purge or opt out', async () => {
    const harness = await start([]);
    for (const [method, url] of ROUTES) {
      expect((await call(harness, method, url, bearer(ADMIN_A))).statusCode).toBe(401);
      expect((await call(harness, method, url, AUTH)).statusCode).toBe(403);
    }
    expect(await harness.newKeys()).toEqual([]);
  });
});

describe('patient administration routes', () => {
  it('PUT …/opt-out sets the flag (a patient never seen included), DELETE lifts it; both audited by token position', async () => {
    const harness = await start();
    const put = await call(harness, 'PUT', `${patientUrl(LOCAL)}/opt-out`, bearer(ADMIN_B));
    expect(put.statusCode).toBe(200);
    const psid = await harness.crosswalk.find(LOCAL);
    expect(put.json()).toEqual({
      request_id: expect.any(String),
      patient_service_id: psid,
      opted_out: true,
      opted_out_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      queries_cancelled: 0,
    });
    expect(await harness.inspect.get(`${harness.prefix}:optout:${psid}`)).toBe(
      put.json().opted_out_at,
    );

    const del = await call(harness, 'DELETE', `${patientUrl(LOCAL)}/opt-out`, bearer(ADMIN_A));
    expect(del.statusCode).toBe(200);
    expect(del.json()).toMatchObject({ opted_out: false, was_opted_out: true });
    expect(await harness.inspect.exists(`${harness.prefix}:optout:${psid}`)).toBe(0);

    const missing = await call(
      harness,
      'DELETE',
      `${patientUrl('MRN-NEVER')}/opt-out`,
      bearer(ADMIN_A),
    );
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ detail: 'unknown patient' });

    const audit = await harness.admin.audit.list();
    expect(audit.map((e) => [e.action, e.actor, e.outcome, e.request_id])).toEqual([
      ['opt_out', 'admin-token#2', 'done', put.json().request_id],
      ['opt_in', 'admin-token#1', 'done', del.json().request_id],
      ['opt_in', 'admin-token#1', 'unknown_patient', expect.any(String)],
    ]);
    // One HMAC reference for both actions on the patient, which holds neither of its ids.
    expect(audit[0]?.patient_ref).toMatch(/^hmac:/);
    expect(audit[1]?.patient_ref).toBe(audit[0]?.patient_ref);
    expect(JSON.stringify(audit)).not.toContain(LOCAL);
    expect(JSON.stringify(audit)).not.toContain(psid);
  });

  it('DELETE /v1/patients/{id} purges (200 with counts), then answers 404; the id is never logged', async () => {
    const harness = await start();
    const preset = await harness.app.inject({
      method: 'PUT',
      url: `${patientUrl(LOCAL)}/presets/END002`,
      headers: AUTH,
    });
    expect(preset.statusCode).toBe(201);
    const psid = preset.json().patient_service_id as string;

    const res = await call(harness, 'DELETE', patientUrl(LOCAL), bearer(ADMIN_A));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      purged: true,
      request_id: expect.any(String),
      kept: [],
      counts: expect.objectContaining({ presets: 1, crosswalk: 1, record: 0 }),
    });
    expect(await harness.crosswalk.find(LOCAL)).toBeUndefined();
    expect(await harness.presets.list(psid)).toEqual([]);

    const again = await call(harness, 'DELETE', patientUrl(LOCAL), bearer(ADMIN_A));
    expect(again.statusCode).toBe(404);
    expect(again.json()).toEqual({ detail: 'unknown patient' });

    expect(harness.logLines.some((l) => l.includes('"msg":"audit"'))).toBe(true);
    for (const line of harness.logLines) expect(line).not.toContain(LOCAL);
  });

  it('validates the patient id: 422 {detail:[{loc,msg,type}]} and nothing stored', async () => {
    const harness = await start();
    const res = await call(
      harness,
      'PUT',
      `${patientUrl('x'.repeat(129))}/opt-out`,
      bearer(ADMIN_A),
    );
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      detail: [{ loc: ['path', 'patient_id'], msg: expect.any(String), type: expect.any(String) }],
    });
    expect(await harness.newKeys()).toEqual([]);
  });
});
