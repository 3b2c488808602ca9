/**
 * The floor under any HTTP ingest on this machine, started by the bench as a child process: a bare
 * `node:http` server that reads each request's body and answers 202 with a small JSON body, doing
 * nothing else (no parsing, validation or Redis). Prints `{"port": N}` once listening; ends on
 * SIGTERM.
 */
import { createServer } from 'node:http';

const ANSWER = '{"accepted":true}';
const server = createServer((request, response) => {
  request.on('data', () => undefined);
  request.on('end', () => {
    response.writeHead(202, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(ANSWER),
    });
    response.end(ANSWER);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
