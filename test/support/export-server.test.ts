import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { BULK_FHIR_FIXTURES, startExportServer, type LocalExportServer } from './export-server.ts';

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const ASYNC = { accept: 'application/fhir+json', prefer: 'respond-async' };

let server: LocalExportServer | undefined;
let folder: string | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  folder = undefined;
});

interface Client {
  clientId: string;
  privateKey: CryptoKey;
  kid: string;
}

async function client(s: LocalExportServer): Promise<Client> {
  const { publicKey, privateKey } = await generateKeyPair('ES384');
  const kid = randomUUID();
  const clientId = `client-${randomUUID()}`;
  s.registerClient(clientId, { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES384' }] });
  return { clientId, privateKey, kid };
}

function assertion(
  c: Client,
  claims: { aud: string; exp?: string; jti?: string; iss?: string },
): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES384', kid: c.kid, typ: 'JWT' })
    .setIssuer(claims.iss ?? c.clientId)
    .setSubject(c.clientId)
    .setAudience(claims.aud)
    .setJti(claims.jti ?? randomUUID())
    .setExpirationTime(claims.exp ?? '4m')
    .sign(c.privateKey);
}

async function tokenRequest(s: LocalExportServer, clientAssertion: string): Promise<Response> {
  return fetch(s.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER,
      client_assertion: clientAssertion,
      scope: 'system/Patient.read system/Condition.rs',
    }),
  });
}

async function bearer(s: LocalExportServer): Promise<Record<string, string>> {
  const c = await client(s);
  const answer = await tokenRequest(s, await assertion(c, { aud: s.tokenUrl }));
  const body = (await answer.json()) as { access_token: string };
  return { authorization: `Bearer ${body.access_token}` };
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

interface Manifest {
  transactionTime: string;
  request: string;
  requiresAccessToken: boolean;
  output: { type: string; url: string; count: number }[];
  error: unknown[];
}

/** Kick-off, then polls (no waiting: the test server's `Retry-After` is only checked). */
async function exportAll(
  s: LocalExportServer,
  auth: Record<string, string>,
  query: string,
): Promise<{ manifest: Manifest; status: string; polls: number }> {
  const kick = await fetch(`${s.baseUrl}/Patient/$export${query}`, {
    headers: { ...auth, ...ASYNC },
  });
  expect(kick.status).toBe(202);
  const status = kick.headers.get('content-location') ?? '';
  for (let polls = 1; ; polls++) {
    const poll = await fetch(status, { headers: auth });
    if (poll.status === 200) return { manifest: (await poll.json()) as Manifest, status, polls };
    expect(poll.status).toBe(202);
    expect(poll.headers.get('retry-after')).toBe('2');
    await poll.arrayBuffer();
  }
}

describe('local $export server', () => {
  it('serves discovery openly and issues tokens only for valid client assertions', async () => {
    server = await startExportServer({ folder: BULK_FHIR_FIXTURES });
    const s = server;
    const smart = (await (await fetch(`${s.baseUrl}/.well-known/smart-configuration`)).json()) as {
      token_endpoint: string;
    };
    expect(smart.token_endpoint).toBe(s.tokenUrl);
    expect((await fetch(`${s.baseUrl}/metadata`)).status).toBe(200);

    const c = await client(s);
    const good = await tokenRequest(s, await assertion(c, { aud: s.tokenUrl, jti: 'j1' }));
    expect(good.status).toBe(200);
    expect(await good.json()).toMatchObject({
      token_type: 'bearer',
      expires_in: 300,
      scope: 'system/Patient.read system/Condition.rs',
    });
    const replayed = await tokenRequest(s, await assertion(c, { aud: s.tokenUrl, jti: 'j1' }));
    expect(replayed.status).toBe(401);
    const wrongAud = await tokenRequest(s, await assertion(c, { aud: `${s.baseUrl}/x` }));
    expect(wrongAud.status).toBe(401);
    const expired = await tokenRequest(s, await assertion(c, { aud: s.tokenUrl, exp: '-1m' }));
    expect(expired.status).toBe(401);
    const tooLong = await tokenRequest(s, await assertion(c, { aud: s.tokenUrl, exp: '1h' }));
    expect(tooLong.status).toBe(401);
    const stranger = await tokenRequest(
      s,
      await assertion(c, { aud: s.tokenUrl, iss: 'someone-else' }),
    );
    expect(stranger.status).toBe(401);
    const otherKey = { ...(await client(s)), clientId: c.clientId };
    const forged = await tokenRequest(s, await assertion(otherKey, { aud: s.tokenUrl }));
    expect(forged.status).toBe(401);
    expect((await forged.json()) as { error: string }).toMatchObject({ error: 'invalid_client' });
    expect(s.requests('/auth/token')).toBe(7);
  });

  it('answers 401 without a valid token on kick-off, status and files', async () => {
    server = await startExportServer({ folder: BULK_FHIR_FIXTURES, pollsBeforeReady: 0 });
    const s = server;
    expect((await fetch(`${s.baseUrl}/$export`, { headers: ASYNC })).status).toBe(401);
    const wrong = { authorization: 'Bearer not-a-token' };
    expect(
      (await fetch(`${s.baseUrl}/Group/g/$export`, { headers: { ...wrong, ...ASYNC } })).status,
    ).toBe(401);
    const auth = await bearer(s);
    const { manifest, status } = await exportAll(s, auth, '?_type=Patient');
    expect((await fetch(status)).status).toBe(401);
    const url = manifest.output[0]?.url ?? '';
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: wrong })).status).toBe(401);
    s.expireTokens();
    expect((await fetch(url, { headers: auth })).status).toBe(401);
    const renewed = await fetch(url, { headers: await bearer(s) });
    expect(lines(await renewed.text())).toHaveLength(25);
  });

  it('kicks off, answers 202 with Retry-After, then the manifest, and serves the files', async () => {
    server = await startExportServer({
      folder: BULK_FHIR_FIXTURES,
      pollsBeforeReady: 2,
      retryAfterSeconds: 2,
    });
    const s = server;
    const auth = await bearer(s);
    const { manifest, status, polls } = await exportAll(s, auth, '?_type=Patient,Condition');
    expect(polls).toBe(3);
    expect(manifest).toMatchObject({
      request: `${s.baseUrl}/Patient/$export?_type=Patient,Condition`,
      requiresAccessToken: true,
      error: [],
    });
    expect(Date.parse(manifest.transactionTime)).not.toBeNaN();
    expect(manifest.output.map((o) => [o.type, o.count])).toEqual([
      ['Condition', 177],
      ['Patient', 25],
    ]);
    for (const entry of manifest.output) {
      const file = await fetch(entry.url, { headers: auth });
      expect(file.headers.get('content-type')).toBe('application/fhir+ndjson');
      const expected = await readFile(join(BULK_FHIR_FIXTURES, `${entry.type}.ndjson`), 'utf8');
      expect(await file.text()).toBe(expected);
    }
    expect(s.requests('/fhir/Patient/$export')).toBe(1);
    expect(s.requests(new URL(status).pathname)).toBe(3);
    expect(s.requests('/fhir/bulkfiles/')).toBe(2);

    expect((await fetch(status, { method: 'DELETE', headers: auth })).status).toBe(202);
    expect((await fetch(status, { headers: auth })).status).toBe(404);
    expect((await fetch(manifest.output[0]?.url ?? '', { headers: auth })).status).toBe(404);
  });

  it('refuses a kick-off without respond-async or with another output format', async () => {
    server = await startExportServer({ folder: BULK_FHIR_FIXTURES });
    const s = server;
    const auth = await bearer(s);
    const noPrefer = await fetch(`${s.baseUrl}/$export`, {
      headers: { ...auth, accept: 'application/fhir+json' },
    });
    expect(noPrefer.status).toBe(400);
    const csv = await fetch(`${s.baseUrl}/$export?_outputFormat=text/csv`, {
      headers: { ...auth, ...ASYNC },
    });
    expect(csv.status).toBe(400);
    const badSince = await fetch(`${s.baseUrl}/$export?_since=yesterday`, {
      headers: { ...auth, ...ASYNC },
    });
    expect(badSince.status).toBe(400);
  });

  it('filters on _since and on a Group', async () => {
    folder = await mkdtemp(join(tmpdir(), 'export-server-'));
    const patient = (id: string, lastUpdated: string) =>
      JSON.stringify({ resourceType: 'Patient', id, meta: { lastUpdated } });
    await writeFile(
      join(folder, 'Patient.ndjson'),
      `${patient('old', '2024-01-01T00:00:00Z')}\n${patient('new', '2025-06-01T00:00:00Z')}\n`,
    );
    await writeFile(
      join(folder, 'Condition.ndjson'),
      `${JSON.stringify({ resourceType: 'Condition', id: 'c1', subject: { reference: 'Patient/old' } })}\n`,
    );
    server = await startExportServer({ folder, pollsBeforeReady: 0, groups: { g1: ['old'] } });
    const s = server;
    const auth = await bearer(s);
    const since = await exportAll(s, auth, '?_since=2025-01-01T00:00:00Z');
    expect(since.manifest.output.map((o) => [o.type, o.count])).toEqual([
      ['Condition', 1],
      ['Patient', 1],
    ]);
    const kick = await fetch(`${s.baseUrl}/Group/g1/$export?_type=Patient`, {
      headers: { ...auth, ...ASYNC },
    });
    const done = (await (
      await fetch(kick.headers.get('content-location') ?? '', { headers: auth })
    ).json()) as Manifest;
    const members = await fetch(done.output[0]?.url ?? '', { headers: auth });
    expect(lines(await members.text()).map((l) => (JSON.parse(l) as { id: string }).id)).toEqual([
      'old',
    ]);
    const unknown = await fetch(`${s.baseUrl}/Group/nope/$export`, {
      headers: { ...auth, ...ASYNC },
    });
    expect(unknown.status).toBe(404);
  });

  it('cuts the next download of a type after N lines, then serves it whole', async () => {
    server = await startExportServer({ folder: BULK_FHIR_FIXTURES, pollsBeforeReady: 0 });
    const s = server;
    const auth = await bearer(s);
    const { manifest } = await exportAll(s, auth, '?_type=Condition');
    const url = manifest.output[0]?.url ?? '';
    s.cutAfterLines('Condition', 10);
    const cut = await fetch(url, { headers: auth });
    expect(cut.status).toBe(200);
    const reader = cut.body?.getReader();
    let received = '';
    let failure: unknown;
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const chunk = await reader?.read();
        if (chunk === undefined || chunk.done) break;
        received += decoder.decode(chunk.value, { stream: true });
      }
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(Error);
    const expected = lines(await readFile(join(BULK_FHIR_FIXTURES, 'Condition.ndjson'), 'utf8'));
    expect(received).toBe(
      expected
        .slice(0, 10)
        .map((l) => `${l}\n`)
        .join(''),
    );
    const whole = await fetch(url, { headers: auth });
    expect(lines(await whole.text())).toEqual(expected);
  });
});
