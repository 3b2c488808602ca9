import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import type { FaultProfile } from '../../../src/simulator/fault-profile.ts';
import { ADMIN_KEY, API_KEY, admin, auth, concordanceBody, waitFor } from './simulator-fixtures.ts';

let sim: RunningSimulator;
const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);

beforeAll(async () => {
  sim = await startSimulator({
    port: 0,
    apiKeys: [API_KEY],
    adminKey: ADMIN_KEY,
    latency: { minMs: 0, maxMs: 0 },
    relationshipCount: 100,
    now: () => NOW,
  });
});
afterAll(() => sim.close());

const setFaults = async (profile: FaultProfile) => {
  const res = await fetch(`${sim.url}/_admin/faults`, {
    method: 'POST',
    headers: { ...admin, 'content-type': 'application/json' },
    body: JSON.stringify(profile),
  });
  expect(res.status).toBe(200);
};
beforeEach(async () => {
  await fetch(`${sim.url}/_admin/faults`, { method: 'DELETE', headers: admin });
});

const get = (path: string, headers: Record<string, string> = auth) =>
  fetch(`${sim.url}${path}`, { headers });
const submit = () =>
  fetch(`${sim.url}/v1/concordance`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(concordanceBody),
  });

describe('over real HTTP', () => {
  it('reports a URL with the bound port and serves /healthz', async () => {
    expect(sim.url).toBe(`http://127.0.0.1:${sim.port}`);
    expect(sim.port).toBeGreaterThan(0);
    expect(await (await get('/healthz', {})).json()).toEqual({ status: 'ok' });
  });

  it('answers 401 and 403 before any fault', async () => {
    await setFaults({ routes: { '*': { error_rate: 1 } } });
    const missing = await get('/v1/relationships', {});
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ detail: expect.any(String) });
    expect((await get('/v1/relationships', { 'x-api-key': 'nope' })).status).toBe(403);
    expect((await get('/v1/relationships')).status).toBe(503);
  });

  it('answers 503 twice, then OK (times)', async () => {
    await setFaults({ routes: { 'POST /v1/concordance': { error_rate: 1, times: 2 } } });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await submit()).status);
    expect(statuses).toEqual([503, 503, 202]);
  });

  it.each([500, 502, 503] as const)('answers %d with a JSON detail', async (status) => {
    await setFaults({
      routes: { 'GET /v1/relationships/:relationship_id': { error_rate: 1, error_status: status } },
    });
    const res = await get('/v1/relationships/rel-000001');
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual({ detail: expect.stringContaining('simulated fault') });
    expect((await get('/v1/relationships')).status).toBe(200);
  });

  it('answers 429 with Retry-After in seconds', async () => {
    await setFaults({
      routes: { 'GET /v1/concordance/:job_id': { rate_limit_rate: 1, retry_after_s: 3 } },
    });
    const res = await get('/v1/concordance/some-job');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(await res.json()).toEqual({ detail: expect.any(String) });
  });

  it('answers 429 with Retry-After as an HTTP date', async () => {
    await setFaults({
      routes: { '*': { rate_limit_rate: 1, retry_after_s: 30, retry_after_format: 'http-date' } },
    });
    const res = await get('/v1/relationships');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe(new Date(NOW + 30_000).toUTCString());
  });

  it('replaces a success body with invalid JSON, keeping the status and the side effect', async () => {
    await setFaults({ routes: { 'POST /v1/concordance': { malformed_rate: 1, times: 1 } } });
    const res = await submit();
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toContain('application/json');
    const text = await res.text();
    expect(() => JSON.parse(text)).toThrow();
    const log = (await (await get('/_admin/stats', admin)).json()) as { jobs: number };
    expect(log.jobs).toBeGreaterThan(0);
  });

  it('replaces a success body with JSON of the wrong shape', async () => {
    await setFaults({
      routes: { 'GET /v1/relationships': { malformed_rate: 1, malformed_body: 'wrong_shape' } },
    });
    const res = await get('/v1/relationships');
    expect(res.status).toBe(200);
    const body: unknown = await res.json();
    expect(Array.isArray(body)).toBe(true);
  });

  it('leaves error answers alone when malformed is on', async () => {
    await setFaults({
      routes: { 'GET /v1/relationships/:relationship_id': { malformed_rate: 1 } },
    });
    const res = await get('/v1/relationships/missing');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Relationship not found' });
  });

  it('records faulted requests in the log', async () => {
    await fetch(`${sim.url}/_admin/requests`, { method: 'DELETE', headers: admin });
    await setFaults({ routes: { 'POST /v1/concordance': { error_rate: 1, times: 1 } } });
    await submit();
    await submit();
    const log = (await (await get('/_admin/requests', admin)).json()) as {
      status: number;
      body: unknown;
    }[];
    expect(log.map((e) => e.status)).toEqual([503, 202]);
    expect(log[0]?.body).toEqual(concordanceBody);
  });
});

describe('hanging and slow requests', () => {
  it('hangs a request (logged without status) and still closes at once', async () => {
    const own = await startSimulator({ port: 0, apiKeys: [API_KEY], relationshipCount: 10 });
    const adminOwn = { 'x-admin-key': API_KEY };
    await fetch(`${own.url}/_admin/faults`, {
      method: 'POST',
      headers: { ...adminOwn, 'content-type': 'application/json' },
      body: JSON.stringify({ routes: { 'GET /v1/relationships': { hang_rate: 1 } } }),
    });
    const hung = fetch(`${own.url}/v1/relationships`, { headers: auth }).then(
      (res) => `answered ${res.status}`,
      () => 'connection closed',
    );
    const entry = await waitFor(async () => {
      const log = (await (
        await fetch(`${own.url}/_admin/requests`, { headers: adminOwn })
      ).json()) as {
        path: string;
        status: number | null;
      }[];
      return log.find((e) => e.path === '/v1/relationships');
    });
    expect(entry.status).toBeNull();
    await own.close();
    expect(await hung).toBe('connection closed');
  });

  it('delays by added_latency_ms, and a pending delay does not hold close() up', async () => {
    const own = await startSimulator({
      port: 0,
      apiKeys: [API_KEY],
      relationshipCount: 10,
      faults: {
        routes: {
          'GET /v1/relationships': { added_latency_ms: 600_000 },
          '*': { added_latency_ms: 1 },
        },
      },
    });
    // The "*" rule only adds a millisecond: the request is still answered.
    expect((await fetch(`${own.url}/v1/relationships/rel-000001`, { headers: auth })).status).toBe(
      200,
    );
    const slow = fetch(`${own.url}/v1/relationships`, { headers: auth }).then(
      (res) => `answered ${res.status}`,
      () => 'connection closed',
    );
    await waitFor(async () => {
      const log = (await (
        await fetch(`${own.url}/_admin/requests`, { headers: { 'x-admin-key': API_KEY } })
      ).json()) as {
        path: string;
      }[];
      return log.find((e) => e.path === '/v1/relationships');
    });
    await own.close();
    expect(await slow).toBe('connection closed');
  });
});

describe('job duration over real HTTP', () => {
  it('runs a job on a small real latency until it completes', async () => {
    const own = await startSimulator({
      port: 0,
      apiKeys: [API_KEY],
      latency: { minMs: 10, maxMs: 30 },
      relationshipCount: 10,
    });
    const { job_id } = (await (
      await fetch(`${own.url}/v1/concordance`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(concordanceBody),
      })
    ).json()) as { job_id: string };
    const result = await waitFor(async () => {
      const body = (await (
        await fetch(`${own.url}/v1/concordance/${job_id}`, { headers: auth })
      ).json()) as {
        status: string;
        concordance: unknown;
      };
      expect(['queued', 'running', 'completed']).toContain(body.status);
      return body.status === 'completed' ? body : undefined;
    });
    expect(result.concordance).toMatchObject({ simulated: true, ccsr_category: 'CIR007' });
    await own.close();
  });
});
