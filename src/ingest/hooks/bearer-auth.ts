import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { tokenActor } from '../../privacy/audit-actor.ts';
import { ForbiddenError } from '../errors/forbidden-error.ts';
import { UnauthorizedError } from '../errors/unauthorized-error.ts';
import type { AuthFailure } from './unauthorized-log.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers without a bearer token (health, readiness, metrics). */
    public?: boolean;
    /** The route administers patient data: only a token of `ADMIN_TOKENS` is accepted. */
    admin?: boolean;
  }
  interface FastifyRequest {
    /** On admin routes: who asked (`admin-token#N`), for the audit log. Never the token. */
    adminActor?: string;
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

/**
 * Like {@link bearerTokenMatcher}, but answers the matching token's position in `tokens` (-1 for
 * none), still comparing every token.
 */
export function bearerTokenIndex(tokens: readonly string[]): (candidate: string) => number {
  const accepted = tokens.map(digest);
  return (candidate) => {
    const presented = digest(candidate);
    let index = -1;
    accepted.forEach((token, i) => {
      if (timingSafeEqual(presented, token) && index === -1) index = i;
    });
    return index;
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
 *
 * Routes marked `config.admin` (purge, opt-out) take only `adminTokens` (`ADMIN_TOKENS`), and an
 * ingest token there is answered 403: the integration engine's token cannot erase patients. An
 * admin token is no ingest token either (401 on the other routes). The admin token's position is
 * put on `request.adminActor` for the audit log.
 */
export function installBearerAuth(
  app: FastifyInstance,
  tokens: readonly string[],
  adminTokens: readonly string[] = [],
): void {
  const isAccepted = bearerTokenMatcher(tokens);
  const adminIndex = bearerTokenIndex(adminTokens);
  app.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    // The queue view's routes check the view's own tokens (queueViewRoutes).
    if (config.public === true || config.queueView === true) return;
    // Why a 401 was answered, for cw_ingest_unauthorized_total and its log line.
    const refuse = (reason: AuthFailure, message: string) => {
      request.authFailure = reason;
      return new UnauthorizedError(message);
    };
    const token = bearerTokenOf(request.headers.authorization);
    if (token === undefined) {
      throw refuse('missing', 'missing bearer token: send Authorization: Bearer <token>');
    }
    if (config.admin === true) {
      const index = adminIndex(token);
      if (index !== -1) {
        request.adminActor = tokenActor(index);
        return;
      }
      if (isAccepted(token)) {
        throw new ForbiddenError('this token may not administer patients: use one of ADMIN_TOKENS');
      }
      throw refuse('invalid', 'invalid bearer token');
    }
    if (!isAccepted(token)) throw refuse('invalid', 'invalid bearer token');
  });
}
