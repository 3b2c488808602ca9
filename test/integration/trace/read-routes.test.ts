import { afterEach, describe, expect, it } from 'vitest';
import { Partitions } from '../../../src/queues/partitions.ts';
import { AUTH, startHarness, type Harness } from '../ingest/support/ingest-harness.ts';
import { seedMessageWithQuery, T0 } from './read-seed.ts';

const ADMIN = 'admin-token-trace-0123456789abcdef';
const LOCAL = 'MRN-TRACE-ROUTE-PLANTED-4e1f';
const bearer = { authorization: `Bearer ${ADMIN}` };

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A harness with one message of LOCAL's patient traced (its sealed copy kept). */
async function seeded(): Promise<{ harness: Harness; psid: string }> {
  const harness = (h = await startHarness({ adminTokens: [ADMIN] }));
  const { patientServiceId: psid } = await harness.crosswalk.resolve(LOCAL);
  const prefix = Partitions.of(harness.config.redis).prefixOf(psid);
  await seedMessageWithQuery(
    harness.inspect,
    prefix,
    'MSG/1 x',
    { psid, version: 1, raw: 'c2VhbGVkLW1lc3NhZ2U=' },
    { category: 'END002', seq: 1, eventId: 'EV-R' },
  );
  return { harness, psid };
}

const traceUrl = (id: string) => `/v1/admin/messages/${encodeURIComponent(id)}/trace`;

describe('message trace admin routes', () => {
  it('GET …/{control_id}/trace: 401 without a token, 403 with an ingest token, 200 with an admin token, 404 unknown', async () => {
    const { harness, psid } = await seeded();
    const get = (url: string, headers: Record<string, string> = {}) =>
      harness.app.inject({ method: 'GET', url, headers });
    expect((await get(traceUrl('MSG/1 x'))).statusCode).toBe(401);
    expect((await get(traceUrl('MSG/1 x'), AUTH)).statusCode).toBe(403);

    const res = await get(traceUrl('MSG/1 x'), bearer);
    expect(res.statusCode).toBe(200);
    const body = res.json<{ control_id: string; receipts: Record<string, unknown>[] }>();
    expect(body).toMatchObject({ control_id: 'MSG/1 x', skipped: 0 });
    expect(body.receipts).toHaveLength(1);
    expect(body.receipts[0]).toMatchObject({
      at: T0,
      psid,
      has_raw: true,
      queries: [
        {
          category: 'END002',
          seq: 1,
          trace: { outcome: 'completed', event_id: 'EV-R' },
          delivery: { webhook_state: 'delivered' },
        },
      ],
    });
    // The sealed message is never sent.
    expect(body.receipts[0]).not.toHaveProperty('raw');
    expect(res.body).not.toContain('c2VhbGVkLW1lc3NhZ2U=');

    const unknown = await get(traceUrl('NOPE'), bearer);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ detail: 'no trace of this control id' });
  });

  it('POST trace-by-patient: the local id in the body, audited; 404 for a patient never seen (audited too)', async () => {
    const { harness, psid } = await seeded();
    const post = (body: unknown, headers: Record<string, string> = bearer) =>
      harness.app.inject({
        method: 'POST',
        url: '/v1/admin/messages/trace-by-patient',
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    expect((await post({ patient_id: LOCAL }, {})).statusCode).toBe(401);

    const res = await post({ patient_id: LOCAL });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      request_id: expect.any(String),
      patient_service_id: psid,
      skipped: 0,
      messages: [{ control_id: 'MSG/1 x', receipts: [{ psid, has_raw: true }] }],
    });
    expect(res.body).not.toContain('c2VhbGVkLW1lc3NhZ2U=');

    expect((await post({ patient_id: 'MRN-NEVER-SEEN-77' })).statusCode).toBe(404);
    expect((await post({ patient_id: '' })).statusCode).toBe(422);
    const audit = await harness.admin.audit.list();
    expect(audit.map((e) => [e.action, e.actor, e.outcome, e.counts])).toEqual([
      ['read_trace', 'admin-token#1', 'done', { messages: 1 }],
      ['read_trace', 'admin-token#1', 'unknown_patient', {}],
    ]);
    expect(audit[0]?.request_id).toBe(res.json<{ request_id: string }>().request_id);
    // Neither the local id nor the service id is in a log line.
    for (const line of harness.logLines) expect(line).not.toContain(LOCAL);
  });
});
