import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { UnauthorizedError } from '../errors/unauthorized-error.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers without a bearer token (health, readiness, metrics). */
    public?: boolean;
  }
}

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/**
 * A matcher of the accepted tokens. Both sides are hashed first, so that `timingSafeEqual` compares
 * equal lengths and neither a token's length nor its prefix shows in the timing; every token is
 * compared, so neither does its position in the list.
 */
export function bearerTokenMatcher(tokens: readonly string[]): (candidate: string) => boolean {
  const accepted = tokens.map(digest);
  return (candidate) => {
    const presented = digest(candidate);
    let found = false;
    for (const token of accepted) found = timingSafeEqual(presented, token) || found;
    return found;
  };
}

/** `Authorization: Bearer <token>` → the token; anything else → undefined. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header ?? '');
  return match?.[1];
}

/**
 * Requires a bearer token from `tokens` on every route not marked `config.public`, unknown routes
 * included (so that a caller without a token learns nothing about which routes exist). Runs as the
 * first onRequest hook: no body is read before the caller is known. With no tokens configured,
 * every protected route answers 401.
 */
export function installBearerAuth(app: FastifyInstance, tokens: readonly string[]): void {
  const isAccepted = bearerTokenMatcher(tokens);
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.public === true) return;
    const token = bearerTokenOf(request.headers.authorization);
    if (token === undefined) {
      throw new UnauthorizedError('missing bearer token: send Authorization: Bearer <token>');
    }
    if (!isAccepted(token)) throw new UnauthorizedError('invalid bearer token');
  });
}
