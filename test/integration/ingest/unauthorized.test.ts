import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { UNAUTHORIZED_METRIC } from '../../../src/ingest/hooks/unauthorized-log.ts';
import { checkMetrics } from '../observability/support/promtool.ts';
import { startHarness, TOKEN, type Harness } from './support/ingest-harness.ts';

const ADMIN_TOKEN = 'admin-unauthorized-token-0123456789';
/** Wrong tokens the test sends: none may show in any log line. */
const PLANTED = 'PLANTED-wrong-token-5f1e2d3c4b5a';
const PLANTED_ADMIN = 'PLANTED-wrong-admin-token-99aa88bb';

let h: Harness;
afterEach(() => h.close());

/** One real HTTP request from `localAddress` (a loopback address of the test's choosing). */
function send(
  url: string,
  options: { method: string; headers?: Record<string, string>; localAddress: string },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method, headers: options.headers, localAddress: options.localAddress },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** `cw_ingest_unauthorized_total` by `route|reason`. */
async function unauthorizedCounts(h: Harness): Promise<Record<string, number>> {
  const metric = await h.registry.getSingleMetric(UNAUTHORIZED_METRIC)?.get();
  return Object.fromEntries(
    (metric?.values ?? []).map((v) => [
      `${String(v.labels.route)}|${String(v.labels.reason)}`,
      v.value,
    ]),
  );
}

interface LogLine {
  level: number;
  msg: string;
  client_address?: string;
  route?: string;
  reason?: string;
  method?: string;
  suppressed?: number;
}

describe('401 answers of the ingest port', () => {
  it('are counted by route pattern and reason, and logged at warn with the client address, never the token', async () => {
    h = await startHarness({ adminTokens: [ADMIN_TOKEN], logLevel: 'info' });
    const base = await h.app.listen({ port: 0, host: '0.0.0.0' });
    const url = (path: string) => `${base.replace('0.0.0.0', '127.0.0.1')}${path}`;
    const updates = url('/v1/record-updates');

    const wrong = { authorization: `Bearer ${PLANTED}` };
    expect(await send(updates, { method: 'POST', headers: wrong, localAddress: '127.0.0.1' })).toBe(
      401,
    );
    expect(await send(updates, { method: 'POST', headers: wrong, localAddress: '127.0.0.1' })).toBe(
      401,
    );
    expect(await send(updates, { method: 'POST', localAddress: '127.0.0.2' })).toBe(401);
    // An admin route with a wrong token, and with an ingest token (403: known, not allowed).
    const purge = url('/v1/patients/MRN-UNAUTH-1');
    expect(
      await send(purge, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${PLANTED_ADMIN}` },
        localAddress: '127.0.0.3',
      }),
    ).toBe(401);
    expect(
      await send(purge, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${TOKEN}` },
        localAddress: '127.0.0.3',
      }),
    ).toBe(403);
    // An unknown route is labelled as such, never by its URL.
    expect(
      await send(url('/v1/no-such-route/MRN-UNAUTH-1'), {
        method: 'GET',
        localAddress: '127.0.0.4',
      }),
    ).toBe(401);
    // The right token is no 401 (a patient never seen: 404), and counts nothing.
    expect(
      await send(url('/v1/patients/MRN-UNAUTH-1/presets'), {
        method: 'GET',
        headers: { authorization: `Bearer ${TOKEN}` },
        localAddress: '127.0.0.1',
      }),
    ).toBe(404);

    expect(await unauthorizedCounts(h)).toEqual({
      '/v1/record-updates|invalid': 2,
      '/v1/record-updates|missing': 1,
      '/v1/patients/:patient_id|invalid': 1,
      '(no route)|missing': 1,
    });

    const lines = h.logLines.map((line) => JSON.parse(line) as LogLine);
    const warned = lines.filter((line) => line.msg === 'unauthorized request');
    // One line per address: 127.0.0.1's second 401 is held back (counted all the same).
    expect(warned).toEqual([
      expect.objectContaining({
        level: 40,
        client_address: '127.0.0.1',
        route: '/v1/record-updates',
        reason: 'invalid',
        method: 'POST',
      }),
      expect.objectContaining({
        level: 40,
        client_address: '127.0.0.2',
        route: '/v1/record-updates',
        reason: 'missing',
      }),
      expect.objectContaining({
        level: 40,
        client_address: '127.0.0.3',
        route: '/v1/patients/:patient_id',
        reason: 'invalid',
        method: 'DELETE',
      }),
      expect.objectContaining({ client_address: '127.0.0.4', route: '(no route)' }),
    ]);
    const all = h.logLines.join('\n');
    for (const secret of [PLANTED, PLANTED_ADMIN, TOKEN, ADMIN_TOKEN, 'MRN-UNAUTH-1']) {
      expect(all).not.toContain(secret);
    }

    // /metrics shows the counter (the same registry), and promtool accepts it.
    const metrics = await (await fetch(url('/metrics'))).text();
    expect(await checkMetrics(metrics)).toEqual({ code: 0, output: '' });
    expect(metrics).toContain(
      `${UNAUTHORIZED_METRIC}{route="/v1/record-updates",reason="invalid"} 2`,
    );
  });
});
