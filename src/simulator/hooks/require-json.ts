import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendDetail } from '../error-replies.ts';

/**
 * Route-level onRequest for body routes: the interface requires `Content-Type: application/json`,
 * also when the body is empty (the body parser alone would let that through).
 */
export async function requireJson(request: FastifyRequest, reply: FastifyReply) {
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    return sendDetail(reply, 415, 'Unsupported Media Type: send Content-Type: application/json');
  }
}
