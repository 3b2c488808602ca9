import type { FastifyRequest } from 'fastify';

/** The path without the query string. */
export function pathOf(request: FastifyRequest): string {
  const q = request.url.indexOf('?');
  return q === -1 ? request.url : request.url.slice(0, q);
}

export function isAdminPath(path: string): boolean {
  return path === '/_admin' || path.startsWith('/_admin/');
}

/** The routes outside the simulated service: no faults, not logged. */
export function isHousekeeping(request: FastifyRequest): boolean {
  const path = pathOf(request);
  return path === '/healthz' || isAdminPath(path);
}
