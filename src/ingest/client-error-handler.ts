import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

const ANSWERS: Readonly<Record<string, readonly [status: string, detail: string]>> = {
  ERR_HTTP_REQUEST_TIMEOUT: ['408 Request Timeout', 'request timeout'],
  HPE_HEADER_OVERFLOW: ['431 Request Header Fields Too Large', 'request headers are too large'],
};

/**
 * Answers a request Node's HTTP parser refused (fastify's `clientErrorHandler`). Fastify's own
 * handler logs the whole error, and a parser error carries `rawPacket`: the raw request bytes,
 * bearer token and body included. This one logs the error code only.
 */
export function handleClientError(
  this: FastifyInstance,
  error: Error & { code?: string },
  socket: Socket,
): void {
  this.log.debug({ code: error.code }, 'client connection error');
  const [status, detail] = ANSWERS[error.code ?? ''] ?? [
    '400 Bad Request',
    'malformed HTTP request',
  ];
  if (socket.writable) {
    const body = JSON.stringify({ detail });
    socket.write(
      `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
