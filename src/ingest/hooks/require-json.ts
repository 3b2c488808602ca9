import type { FastifyRequest } from 'fastify';
import { UnsupportedMediaTypeError } from '../errors/unsupported-media-type-error.ts';

/**
 * Route-level onRequest of body routes: only `application/json`, also when the body is empty (the
 * body parser alone would let a request without Content-Type and body through to validation).
 */
export async function requireJson(request: FastifyRequest): Promise<void> {
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw new UnsupportedMediaTypeError();
}
