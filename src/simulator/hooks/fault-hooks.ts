import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sendDetail } from '../error-replies.ts';
import type { FaultInjector } from '../faults/fault-injector.ts';
import type { FaultDecision } from '../faults/fault-decision.ts';
import { isHousekeeping } from '../request-paths.ts';

type Malformed = Extract<FaultDecision['action'], { kind: 'malformed' }>['body'];

const MALFORMED_BODIES: Record<Malformed, string> = {
  // Cut off mid-value: no JSON parser accepts it.
  invalid_json: '{"simulated_fault": "malformed", "data": [1, 2, ',
  // Valid JSON that no response schema of the interface accepts.
  wrong_shape: '["simulated fault: this body fits no response schema"]',
};

const ERROR_TEXT = {
  400: 'Bad Request',
  404: 'Not Found',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/**
 * Applies the fault profile after authentication and body parsing (preValidation), so a bad key
 * still gets 401/403 and the request log still shows the body. Hung requests and pending delays
 * are released when the app closes.
 */
export function installFaultHooks(
  app: FastifyInstance,
  faults: FaultInjector,
  now: () => number,
): void {
  const closing = new AbortController();
  const hanging = new Set<Socket>();
  const malformed = new WeakMap<FastifyRequest, Malformed>();

  app.addHook('preValidation', async (request, reply) => {
    if (isHousekeeping(request)) return;
    const pattern = request.routeOptions.url;
    const decision = faults.decide(
      pattern === undefined ? undefined : `${request.method} ${pattern}`,
    );
    if (decision.delayMs > 0) {
      try {
        await sleep(decision.delayMs, undefined, { signal: closing.signal });
      } catch {
        reply.hijack();
        return;
      }
    }
    const { action } = decision;
    switch (action.kind) {
      case 'none':
        return;
      case 'hang': {
        // Take the reply away from fastify and never write it; close() destroys the socket.
        reply.hijack();
        const socket = request.raw.socket as Socket | null;
        if (socket) {
          hanging.add(socket);
          socket.once('close', () => hanging.delete(socket));
        }
        return;
      }
      case 'rate_limit':
        reply.header(
          'retry-after',
          action.format === 'seconds'
            ? String(action.retryAfterS)
            : new Date(now() + action.retryAfterS * 1000).toUTCString(),
        );
        return sendDetail(reply, 429, 'Too Many Requests (simulated fault)');
      case 'error':
        return sendDetail(reply, action.status, `${ERROR_TEXT[action.status]} (simulated fault)`);
      case 'malformed':
        malformed.set(request, action.body);
        return;
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const kind = malformed.get(request);
    if (kind === undefined || reply.statusCode >= 300) return payload;
    reply.header('content-type', 'application/json; charset=utf-8');
    return MALFORMED_BODIES[kind];
  });

  app.addHook('preClose', async () => {
    closing.abort();
    for (const socket of hanging) socket.destroy();
    hanging.clear();
  });
}
