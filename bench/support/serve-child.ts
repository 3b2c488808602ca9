import type { Server } from 'node:http';

/**
 * Runs `server` as a bench child process does: on a free loopback port, printing `{"port": N}` once
 * listening (what the bench waits for), with long keep-alive for the load generators, and closing on
 * SIGTERM or SIGINT (kept-alive connections dropped, so that it exits at once).
 */
export function serveChild(server: Server): void {
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
