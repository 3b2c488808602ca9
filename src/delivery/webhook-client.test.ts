import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookClient } from './webhook-client.ts';

const request = {
  body: '{}',
  headers: {
    'content-type': 'application/json' as const,
    'webhook-id': 'id',
    'webhook-timestamp': '1',
    'webhook-signature': 'v1,x',
  },
};

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

async function endpoint(handle: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server?.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

describe('WebhookClient', () => {
  it('reports a 2xx as delivered', async () => {
    const url = await endpoint((_req, res) => res.writeHead(202).end());
    expect(await new WebhookClient({ url }).post(request)).toEqual({ ok: true, status: 202 });
  });

  it('tells 410 (final) from other statuses, and does not follow redirects', async () => {
    let hits = 0;
    const url = await endpoint((req, res) => {
      hits += 1;
      if (req.url === '/gone') res.writeHead(410).end();
      else res.writeHead(307, { location: '/gone' }).end();
    });
    const client = new WebhookClient({ url });
    const redirected = await client.post(request);
    expect(redirected.ok || redirected.error).toMatchObject({
      code: 'ERR_WEBHOOK_STATUS',
      status: 307,
      retryable: true,
    });
    expect(hits).toBe(1);
    const gone = await new WebhookClient({ url: url.replace('/hook', '/gone') }).post(request);
    expect(gone.ok || gone.error).toMatchObject({
      code: 'ERR_WEBHOOK_GONE',
      status: 410,
      retryable: false,
    });
  });

  it('gives up an attempt after the timeout', async () => {
    const url = await endpoint(() => undefined); // never answers
    const result = await new WebhookClient({ url, timeoutMs: 100 }).post(request);
    expect(result.ok || result.error).toMatchObject({
      code: 'ERR_WEBHOOK_TIMEOUT',
      status: undefined,
    });
  });

  it('reports a refused connection as a network error', async () => {
    const url = await endpoint((_req, res) => res.end());
    server?.close();
    server = undefined;
    const result = await new WebhookClient({ url }).post(request);
    expect(result.ok || result.error).toMatchObject({
      code: 'ERR_WEBHOOK_NETWORK',
      retryable: true,
    });
  });
});
