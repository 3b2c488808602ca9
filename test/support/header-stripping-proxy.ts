import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A forwarding HTTP proxy that drops some request headers, like a misconfigured gateway would.
 * It lets a test reach the simulator's "missing x-api-key" answer (401) with a client that always
 * sends its key.
 */
export async function startHeaderStrippingProxy(
  target: string,
  drop: readonly string[],
): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server = createServer((incoming, outgoing) => {
    const dropped = new Set(drop.map((name) => name.toLowerCase()));
    const headers: IncomingHttpHeaders = Object.fromEntries(
      Object.entries(incoming.headers).filter(([name]) => !dropped.has(name)),
    );
    const forwarded = request(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        method: incoming.method,
        path: incoming.url,
        headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
