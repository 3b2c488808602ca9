/**
 * The floor under any HTTP ingest on this machine, started by the bench as a child process: a bare
 * `node:http` server that reads each request's body and answers 202 with a small JSON body, doing
 * nothing else (no parsing, validation or Redis). Prints `{"port": N}` once listening; ends on
 * SIGTERM.
 */
import { createServer } from 'node:http';
import { serveChild } from './support/serve-child.ts';

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
serveChild(server);
