import { afterAll, describe, expect, it } from 'vitest';
import { admin, auth, call, concordanceBody, testApp } from './simulator-fixtures.ts';

describe('request log', () => {
  const app = testApp({ requestLogSize: 5 });
  afterAll(() => app.close());
  const log = async () =>
    (await call(app, { url: '/_admin/requests', headers: admin })).body as {
      method: string;
      path: string;
      status: number | null;
      headers: Record<string, string>;
      body: unknown;
    }[];

  it('records service requests with path, status, headers without keys, and the parsed body', async () => {
    await call(app, { method: 'DELETE', url: '/_admin/requests', headers: admin });
    await call(app, { url: '/healthz' });
    await call(app, {
      url: '/v1/relationships?limit=2&include_total=true',
      headers: { ...auth, 'x-trace': 't1' },
    });
    await call(app, {
      method: 'POST',
      url: '/v1/concordance',
      headers: auth,
      payload: concordanceBody,
    });
    await call(app, { url: '/v1/relationships', headers: { 'x-api-key': 'wrong' } });
    const entries = await log();
    expect(entries.map((e) => [e.method, e.path, e.status])).toEqual([
      ['GET', '/v1/relationships?limit=2&include_total=true', 200],
      ['POST', '/v1/concordance', 202],
      ['GET', '/v1/relationships', 403],
    ]);
    expect(entries[0]?.headers).toMatchObject({ 'x-trace': 't1' });
    expect(entries[1]?.body).toEqual(concordanceBody);
    expect(entries[1]?.headers['content-type']).toContain('application/json');
    expect(entries[0]?.body).toBeNull();
    for (const e of entries) {
      expect(e.headers).not.toHaveProperty('x-api-key');
      expect(e.headers).not.toHaveProperty('x-admin-key');
    }
    expect(JSON.stringify(entries)).not.toMatch(/test-api-key|test-admin-key|"wrong"/);
  });

  it('keeps only the last requestLogSize requests, oldest first', async () => {
    for (let i = 0; i < 8; i++)
      await call(app, { url: `/v1/relationships?offset=${i}`, headers: auth });
    expect((await log()).map((e) => e.path)).toEqual(
      [3, 4, 5, 6, 7].map((i) => `/v1/relationships?offset=${i}`),
    );
  });

  it('clears with DELETE (204)', async () => {
    expect(
      (await call(app, { method: 'DELETE', url: '/_admin/requests', headers: admin })).status,
    ).toBe(204);
    expect(await log()).toEqual([]);
  });
});

describe('fault profile admin', () => {
  const app = testApp();
  afterAll(() => app.close());
  const faults = (method: 'GET' | 'POST' | 'DELETE', payload?: object) =>
    call(app, { method, url: '/_admin/faults', headers: admin, ...(payload && { payload }) });

  it('starts empty, replaces, reads back and clears', async () => {
    expect(await faults('GET')).toMatchObject({ status: 200, body: {} });
    const profile = {
      routes: { 'GET /v1/relationships': { error_rate: 1, error_status: 502 } },
      job_failure_rate: 0.5,
    };
    expect(await faults('POST', profile)).toMatchObject({ status: 200, body: profile });
    expect((await faults('GET')).body).toEqual(profile);
    expect((await call(app, { url: '/v1/relationships', headers: auth })).status).toBe(502);
    expect((await faults('DELETE')).status).toBe(204);
    expect((await faults('GET')).body).toEqual({});
    expect((await call(app, { url: '/v1/relationships', headers: auth })).status).toBe(200);
  });

  it('answers 422 with the field path to a bad profile, and keeps the old one', async () => {
    await faults('POST', { job_loss_rate: 0.1 });
    const res = await faults('POST', { routes: { '*': { error_rate: 3 } } });
    expect(res).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['body', 'routes', '*', 'error_rate'] }] },
    });
    expect((await faults('GET')).body).toEqual({ job_loss_rate: 0.1 });
  });

  it('shows memory counters', async () => {
    expect((await call(app, { url: '/_admin/stats', headers: admin })).body).toEqual({
      jobs: expect.any(Number),
      registered_patients: 0,
      relationships: 500,
      logged_requests: expect.any(Number),
    });
  });
});

describe('job timeline admin', () => {
  const clock = { t: Date.UTC(2026, 0, 1) };
  const app = testApp({ latency: { minMs: 4_000, maxMs: 4_000 }, now: () => clock.t });
  afterAll(() => app.close());

  it('tells when a job was submitted, runs and finishes, without moving its state', async () => {
    const submitted = await call(app, {
      method: 'POST',
      url: '/v1/concordance',
      headers: auth,
      payload: concordanceBody,
    });
    const jobId = (submitted.body as { job_id: string }).job_id;
    const timeline = await call(app, { url: `/_admin/jobs/${jobId}`, headers: admin });
    expect(timeline).toMatchObject({
      status: 200,
      body: {
        job_id: jobId,
        outcome: 'completed',
        submitted_at: '2026-01-01T00:00:00.000Z',
        running_at: '2026-01-01T00:00:01.000Z',
        finishes_at: '2026-01-01T00:00:04.000Z',
        status_reads: 0,
        first_finished_read_at: null,
      },
    });
    clock.t += 4_000;
    const polled = await call(app, { url: `/v1/concordance/${jobId}`, headers: auth });
    expect((polled.body as { status: string }).status).toBe('completed');
    clock.t += 1_000;
    await call(app, { url: `/v1/concordance/${jobId}`, headers: auth });
    expect((await call(app, { url: `/_admin/jobs/${jobId}`, headers: admin })).body).toMatchObject({
      status_reads: 2,
      first_finished_read_at: '2026-01-01T00:00:04.000Z',
    });
  });

  it('answers 404 for an unknown job and needs the admin key', async () => {
    expect((await call(app, { url: '/_admin/jobs/nope', headers: admin })).status).toBe(404);
    expect((await call(app, { url: '/_admin/jobs/nope', headers: auth })).status).toBe(401);
  });
});
