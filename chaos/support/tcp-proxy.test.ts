import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TcpProxy } from './tcp-proxy.ts';

let echo: Server;
let upstreamConnections: number;
let proxy: TcpProxy;

beforeEach(async () => {
  upstreamConnections = 0;
  echo = createServer((socket) => {
    upstreamConnections++;
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  proxy = await TcpProxy.start((echo.address() as AddressInfo).port);
});

afterEach(async () => {
  await proxy.close();
  echo.close();
});

async function open(): Promise<Socket> {
  const socket = connect(proxy.port, '127.0.0.1');
  await once(socket, 'connect');
  return socket;
}

async function roundTrip(socket: Socket, text: string): Promise<string> {
  socket.write(text);
  const [chunk] = (await once(socket, 'data')) as [Buffer];
  return chunk.toString();
}

describe('TcpProxy', () => {
  it('forwards both ways', async () => {
    const socket = await open();
    expect(await roundTrip(socket, 'ping')).toBe('ping');
    socket.destroy();
  });

  it('refuse() resets open connections and refuses new ones; restore() listens on the same port', async () => {
    const socket = await open();
    const reset = once(socket, 'error');
    await proxy.refuse();
    const [resetError] = (await reset) as [NodeJS.ErrnoException];
    expect(resetError.code).toBe('ECONNRESET');
    const refused = connect(proxy.port, '127.0.0.1');
    const [err] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(err.code).toBe('ECONNREFUSED');
    await proxy.restore();
    const again = await open();
    expect(await roundTrip(again, 'back')).toBe('back');
    again.destroy();
  });

  it('hang() accepts connections without forwarding them; restore() lets the held bytes through', async () => {
    proxy.hang();
    const held = new Promise<number>((resolve) => (proxy.onHeld = resolve));
    const socket = await open();
    socket.write('held');
    expect(await held).toBe(1);
    expect(upstreamConnections).toBe(0);
    const data = once(socket, 'data');
    await proxy.restore();
    const [chunk] = (await data) as [Buffer];
    expect(chunk.toString()).toBe('held');
    expect(upstreamConnections).toBe(1);
    socket.destroy();
  });
});
