import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sendDetail } from '../error-replies.ts';
import { isAdminPath, pathOf } from '../request-paths.ts';

const digest = (key: string) => createHash('sha256').update(key, 'utf8').digest();

/** Compares digests in constant time, against every key, so timing tells nothing. */
function keyMatcher(keys: readonly string[]): (candidate: string) => boolean {
  const digests = keys.map(digest);
  return (candidate) => {
    const d = digest(candidate);
    let found = false;
    for (const k of digests) found = timingSafeEqual(d, k) || found;
    return found;
  };
}

/**
 * `x-api-key` on every route but `GET /healthz`; `x-admin-key` on `/_admin/*`. Missing: 401,
 * unknown: 403. Runs first (onRequest), so faults and body errors come after it.
 */
export function installApiKeyAuth(
  app: FastifyInstance,
  apiKeys: readonly string[],
  adminKey: string,
): void {
  const isApiKey = keyMatcher(apiKeys);
  const isAdminKey = keyMatcher([adminKey]);
  app.addHook('onRequest', async (request, reply) => {
    const path = pathOf(request);
    if (path === '/healthz' && (request.method === 'GET' || request.method === 'HEAD')) return;
    const admin = isAdminPath(path);
    const header = admin ? 'x-admin-key' : 'x-api-key';
    const value = request.headers[header];
    if (value === undefined || value === '') {
      return sendDetail(reply, 401, `Missing ${header} header`);
    }
    const key = Array.isArray(value) ? value.join(',') : value;
    if (!(admin ? isAdminKey : isApiKey)(key)) {
      return sendDetail(reply, 403, `Invalid ${header}`);
    }
  });
}
