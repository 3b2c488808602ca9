import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

/** One request the proxy handled. */
export interface ProxiedRequest {
  /** `forward` for an http:// request in absolute form, `connect` for a CONNECT tunnel (https://). */
  kind: 'forward' | 'connect';
  /** `host:port` the client asked for. */
  target: string;
  /** The path of a forwarded request (a tunnel's is encrypted). */
  path?: string;
}

/**
 * A small HTTP proxy as hospital networks run them: it forwards http:// requests, tunnels https://
 * through CONNECT, requires Basic credentials (407 without them), and counts what it handled.
 */
export class CountingProxy {
  readonly requests: ProxiedRequest[] = [];
  readonly refused: string[] = [];
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #authorization: string;
  readonly #credentials: string;
  url = '';

  private constructor(user: string, password: string) {
    this.#credentials = `${user}:${password}`;
    this.#authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    this.#server = createServer((req, res) => {
      if (req.headers['proxy-authorization'] !== this.#authorization) {
        this.refused.push(req.url ?? '');
        res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"' }).end();
        return;
      }
      const target = new URL(req.url ?? '');
      this.requests.push({ kind: 'forward', target: target.host, path: target.pathname });
      const headers = { ...req.headers };
      delete headers['proxy-authorization'];
      delete headers['proxy-connection'];
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          method: req.method,
          headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    this.#server.on('connect', (req, client: Socket, head: Buffer) => {
      this.#sockets.add(client);
      client.on('close', () => this.#sockets.delete(client));
      client.on('error', () => client.destroy());
      if (req.headers['proxy-authorization'] !== this.#authorization) {
        this.refused.push(req.url ?? '');
        client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
        return;
      }
      const target = req.url ?? '';
      this.requests.push({ kind: 'connect', target });
      const { hostname, port } = new URL(`http://${target}`);
      const upstream = connect(Number(port), hostname, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      this.#sockets.add(upstream);
      upstream.on('close', () => this.#sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
    });
  }

  /** Starts a proxy that accepts `user:password`; its `url` carries them, as `HTTPS_PROXY` takes it. */
  static async start(user: string, password: string): Promise<CountingProxy> {
    const proxy = new CountingProxy(user, password);
    proxy.#server.listen(0, '127.0.0.1');
    await once(proxy.#server, 'listening');
    const { port } = proxy.#server.address() as AddressInfo;
    proxy.url = `http://${proxy.#credentials}@127.0.0.1:${port}`;
    return proxy;
  }

  /** The same proxy without credentials (it answers 407). */
  get urlWithoutCredentials(): string {
    return this.url.replace(`${this.#credentials}@`, '');
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
