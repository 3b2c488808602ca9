import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** What the proxy does with traffic right now. */
export type ProxyMode = 'pass' | 'refused' | 'hung';

/**
 * A TCP proxy on 127.0.0.1 between the pipeline and Redis that can fail the way networks fail:
 *
 * - `refuse()`: the listening socket is closed (new connections get ECONNREFUSED) and every open
 *   connection is reset (RST), as when Redis or its host goes away.
 * - `hang()`: connections are still accepted but nothing is forwarded in either direction (a black
 *   hole: the bytes wait in the kernel's buffers, as TCP retransmissions would), as when Redis is
 *   SIGSTOPped or a firewall drops packets. `restore()` lets the held bytes through, in order.
 *
 * The port stays the same across `refuse()`/`restore()`, so clients reconnect to the same address.
 */
export class TcpProxy {
  #port = 0;
  readonly #target: { host: string; port: number };
  #server: Server | undefined;
  #mode: ProxyMode = 'pass';
  readonly #pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();
  /** Called with the number of held connections whenever one is accepted while hung. */
  onHeld: ((held: number) => void) | undefined;
  /** Connections accepted while hung: connected upstream only on restore. */
  readonly #held: { client: Socket; chunks: Buffer[] }[] = [];

  private constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  /** Starts a proxy to 127.0.0.1:`targetPort` on a free port (or `port`). */
  static async start(targetPort: number, port = 0): Promise<TcpProxy> {
    const proxy = new TcpProxy({ host: '127.0.0.1', port: targetPort });
    proxy.#port = await proxy.#listen(port);
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async #listen(port: number): Promise<number> {
    const server = createServer((socket) => this.#accept(socket));
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    this.#server = server;
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    return address.port;
  }

  #accept(client: Socket): void {
    client.on('error', () => undefined);
    if (this.#mode === 'hung') {
      const held = { client, chunks: [] as Buffer[] };
      client.pause();
      this.#held.push(held);
      this.onHeld?.(this.#held.length);
      client.on('close', () => {
        const index = this.#held.indexOf(held);
        if (index >= 0) this.#held.splice(index, 1);
      });
      return;
    }
    this.#pipe(client);
  }

  #pipe(client: Socket): void {
    const upstream = connect(this.#target.port, this.#target.host);
    const pair = { client, upstream };
    this.#pairs.add(pair);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => {
      upstream.destroy();
      this.#pairs.delete(pair);
    });
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
    if (this.#mode === 'hung') {
      client.pause();
      upstream.pause();
    } else {
      client.resume();
    }
  }

  /** Closes the listening socket and resets every open connection. */
  async refuse(): Promise<void> {
    this.#mode = 'refused';
    const server = this.#server;
    this.#server = undefined;
    for (const { client, upstream } of this.#pairs) {
      client.resetAndDestroy();
      upstream?.destroy();
    }
    this.#pairs.clear();
    for (const { client } of this.#held.splice(0)) client.resetAndDestroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Keeps accepting, forwards nothing. */
  hang(): void {
    this.#mode = 'hung';
    for (const { client, upstream } of this.#pairs) {
      client.pause();
      upstream?.pause();
    }
  }

  /** Back to forwarding: listens again after `refuse()`, lets held bytes through after `hang()`. */
  async restore(): Promise<void> {
    const was = this.#mode;
    this.#mode = 'pass';
    if (was === 'refused') {
      await this.#listen(this.port);
      return;
    }
    for (const { client, upstream } of this.#pairs) {
      client.resume();
      upstream?.resume();
    }
    for (const { client } of this.#held.splice(0)) this.#pipe(client);
  }

  async close(): Promise<void> {
    this.#mode = 'refused';
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream?.destroy();
    }
    this.#pairs.clear();
    for (const { client } of this.#held.splice(0)) client.destroy();
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
