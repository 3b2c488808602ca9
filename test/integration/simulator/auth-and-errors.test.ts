import { afterAll, describe, expect, it } from 'vitest';
import {
  admin,
  API_KEY,
  auth,
  call,
  concordanceBody,
  OTHER_KEY,
  testApp,
} from './simulator-fixtures.ts';

const app = testApp({ bodyLimitBytes: 64 * 1024 });
afterAll(() => app.close());

describe('authentication', () => {
  it('serves /healthz without a key', async () => {
    expect(await call(app, { url: '/healthz' })).toMatchObject({
      status: 200,
      body: { status: 'ok' },
    });
  });

  it.each([
    ['GET', '/v1/relationships'],
    ['GET', '/v1/relationships/rel-000001'],
    ['GET', '/v1/concordance/any'],
    ['POST', '/v1/concordance'],
    ['POST', '/v1/patient'],
    ['POST', '/v1/patient/any'],
    ['GET', '/v1/unknown'],
  ] as const)(
    'answers 401 to %s %s without x-api-key and 403 with an unknown one',
    async (method, url) => {
      const missing = await call(app, { method, url });
      expect(missing).toMatchObject({
        status: 401,
        body: { detail: expect.stringContaining('x-api-key') },
      });
      const wrong = await call(app, { method, url, headers: { 'x-api-key': 'nope' } });
      expect(wrong).toMatchObject({ status: 403, body: { detail: expect.any(String) } });
      const empty = await call(app, { method, url, headers: { 'x-api-key': '' } });
      expect(empty.status).toBe(401);
    },
  );

  it('accepts every configured API key', async () => {
    for (const key of [API_KEY, OTHER_KEY]) {
      expect(
        (await call(app, { url: '/v1/relationships', headers: { 'x-api-key': key } })).status,
      ).toBe(200);
    }
  });

  it('guards /_admin with x-admin-key, not x-api-key', async () => {
    expect((await call(app, { url: '/_admin/requests' })).status).toBe(401);
    expect((await call(app, { url: '/_admin/requests', headers: auth })).status).toBe(401);
    expect(
      (await call(app, { url: '/_admin/requests', headers: { 'x-admin-key': API_KEY } })).status,
    ).toBe(403);
    expect(
      (await call(app, { url: '/_admin/faults', headers: { 'x-admin-key': 'nope' } })).status,
    ).toBe(403);
    expect((await call(app, { url: '/_admin/requests', headers: admin })).status).toBe(200);
  });

  it('checks the key before the body', async () => {
    const res = await call(app, {
      method: 'POST',
      url: '/v1/concordance',
      headers: { 'x-api-key': 'nope', 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(res.status).toBe(403);
  });
});

describe('request errors', () => {
  it('answers 415 to a body that is not JSON, and to a missing Content-Type', async () => {
    for (const headers of [
      { ...auth, 'content-type': 'text/plain' },
      { ...auth, 'content-type': 'application/xml' },
      auth,
    ]) {
      const res = await call(app, {
        method: 'POST',
        url: '/v1/concordance',
        headers,
        payload: 'x',
      });
      expect(res).toMatchObject({
        status: 415,
        body: { detail: expect.stringContaining('application/json') },
      });
    }
  });

  it('answers 400 to malformed JSON', async () => {
    const res = await call(app, {
      method: 'POST',
      url: '/v1/concordance',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"assembled_patient": ',
    });
    expect(res).toMatchObject({
      status: 400,
      body: { detail: expect.stringContaining('Malformed JSON') },
    });
  });

  it('answers 413 to a body over the limit', async () => {
    const big = { ...concordanceBody, padding: 'x'.repeat(70 * 1024) };
    const res = await call(app, {
      method: 'POST',
      url: '/v1/concordance',
      headers: auth,
      payload: big,
    });
    expect(res).toMatchObject({ status: 413, body: { detail: expect.any(String) } });
  });

  it('answers 404 with JSON to an unknown route', async () => {
    expect(await call(app, { url: '/v2/nothing', headers: auth })).toMatchObject({
      status: 404,
      body: { detail: 'Not Found' },
    });
  });

  it('accepts application/json with a charset', async () => {
    const res = await call(app, {
      method: 'POST',
      url: '/v1/concordance',
      headers: { ...auth, 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify(concordanceBody),
    });
    expect(res.status).toBe(202);
  });
});
