/**
 * A discard OTLP/HTTP collector, started by the bench as a child process (its CPU is its own, not
 * the pipeline's): it reads each export request's body, counts it under the request path's first
 * segment (the bench gives each variant its own base path, `http://127.0.0.1:N/<variant>`, so its
 * traces go to `/<variant>/v1/traces`) and answers 200 `{}` (an OTLP/HTTP JSON success, nothing
 * rejected). Spans are counted as occurrences of `"spanId":` in the body (a cheap count, no
 * parsing). `GET /stats` answers the counts as JSON. Prints `{"port": N}` once listening; ends on
 * SIGTERM.
 */
import { createServer } from 'node:http';
import { serveChild } from './support/serve-child.ts';

interface Counts {
  requests: number;
  bytes: number;
  spans: number;
}

const SPAN = /"spanId":/g;
const counts: Record<string, Counts> = {};
const ANSWER = '{}';

const server = createServer((request, response) => {
  const url = request.url ?? '/';
  if (request.method === 'GET' && url === '/stats') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(counts));
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    const variant = url.split('/')[1] ?? '';
    const c = (counts[variant] ??= { requests: 0, bytes: 0, spans: 0 });
    c.requests += 1;
    c.bytes += body.length;
    c.spans += body.toString('utf8').match(SPAN)?.length ?? 0;
    response.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(ANSWER),
    });
    response.end(ANSWER);
  });
});
serveChild(server);
