import { once } from 'node:events';
import {
  createConnection,
  createServer,
  type AddressInfo,
  type Server,
  type Socket,
} from 'node:net';

/**
 * What the proxy does:
 * - `forward`: a plain TCP relay to the target.
 * - `refuse`: the listening socket is closed, so new connections are refused (`ECONNREFUSED`),
 *   and the open ones are reset: Redis is down.
 * - `hang`: connections are accepted but nothing is relayed in either direction (reads stop, so
 *   bytes wait in the kernel's buffers, as with a `SIGSTOP`ped Redis or a firewall that drops
 *   packets): Redis is hung. Back in `forward`, what waited is relayed, in order.
 * - `reset`: every connection is accepted and reset at once (a load balancer without a backend);
 *   unlike `refuse`, each attempt is counted in {@link TcpProxy.accepted}.
 */
export type ProxyMode = 'forward' | 'refuse' | 'hang' | 'reset';

interface Pair {
  client: Socket;
  /** Undefined while a connection accepted during a hang waits to be relayed. */
  upstream: Socket | undefined;
}

/**
 * A TCP proxy in front of Redis (or anything), for tests that take Redis away from a process
 * without stopping the shared test Redis. It listens on one port for its whole life, so that the
 * process under test keeps its configured URL across `refuse()` and `forward()`.
 */
export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #pairs = new Set<Pair>();
  #server: Server | undefined;
  #port = 0;
  #mode: ProxyMode = 'forward';
  #accepted = 0;

  private constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  /** A proxy in `forward` mode on a free port of 127.0.0.1. */
  static async start(target: string | { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(typeof target === 'string' ? hostPortOf(target) : target);
    await proxy.#listen(0);
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  /** `redis://127.0.0.1:<port>`: the target's URL as the process under test should use it. */
  get redisUrl(): string {
    return `redis://127.0.0.1:${this.#port}`;
  }

  /** Connections accepted since the start, in any mode (connection attempts, for `reset`). */
  get accepted(): number {
    return this.#accepted;
  }

  /** Connections currently held (relayed or waiting). */
  get connections(): number {
    return this.#pairs.size;
  }

  /** Relays again; connections held during a hang get their upstream now. */
  async forward(): Promise<void> {
    this.#mode = 'forward';
    if (this.#server === undefined) await this.#listen(this.#port);
    for (const pair of this.#pairs) this.#relay(pair);
  }

  /** Closes the listening socket (new connections are refused) and resets every open one. */
  async refuse(): Promise<void> {
    this.#mode = 'refuse';
    const server = this.#server;
    this.#server = undefined;
    for (const pair of this.#pairs) this.#drop(pair);
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Accepts but relays nothing, in either direction, until {@link forward}. */
  async hang(): Promise<void> {
    this.#mode = 'hang';
    if (this.#server === undefined) await this.#listen(this.#port);
    for (const pair of this.#pairs) {
      pair.client.pause();
      pair.upstream?.pause();
    }
  }

  /** Accepts and resets every connection (open ones too) until another mode is set. */
  async reset(): Promise<void> {
    this.#mode = 'reset';
    if (this.#server === undefined) await this.#listen(this.#port);
    this.resetConnections();
  }

  /** Resets every open connection (whatever the mode), as a restarted Redis would. */
  resetConnections(): void {
    for (const pair of this.#pairs) this.#drop(pair);
  }

  async close(): Promise<void> {
    await this.refuse();
  }

  async #listen(port: number): Promise<void> {
    const server = createServer({ allowHalfOpen: false }, (client) => this.#accept(client));
    server.listen({ port, host: '127.0.0.1', exclusive: true });
    await Promise.race([
      once(server, 'listening'),
      once(server, 'error').then(([err]) => {
        throw err as Error;
      }),
    ]);
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
  }

  #accept(client: Socket): void {
    this.#accepted += 1;
    if (this.#mode === 'reset') {
      client.on('error', () => undefined);
      client.resetAndDestroy();
      return;
    }
    const pair: Pair = { client, upstream: undefined };
    this.#pairs.add(pair);
    client.on('error', () => this.#drop(pair));
    client.on('close', () => this.#drop(pair));
    if (this.#mode === 'forward') this.#relay(pair);
    else client.pause();
  }

  /** Connects the upstream side if needed, and lets bytes flow both ways. */
  #relay(pair: Pair): void {
    if (!this.#pairs.has(pair)) return;
    if (pair.upstream === undefined) {
      const upstream = createConnection(this.#target);
      pair.upstream = upstream;
      upstream.on('error', () => this.#drop(pair));
      upstream.on('close', () => this.#drop(pair));
      this.#pump(pair.client, upstream);
      this.#pump(upstream, pair.client);
    }
    pair.client.resume();
    pair.upstream.resume();
  }

  /** Copies `from` to `to` with back-pressure, resuming only while the mode is `forward`. */
  #pump(from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (this.#mode === 'forward') from.resume();
    });
    from.on('end', () => to.end());
  }

  #drop(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    pair.client.resetAndDestroy();
    if (pair.upstream !== undefined && !pair.upstream.destroyed) pair.upstream.destroy();
  }
}

function hostPortOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 6379) };
}
