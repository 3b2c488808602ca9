import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RecordedRequest, RequestLog } from '../request-log.ts';
import { isHousekeeping } from '../request-paths.ts';

const SECRET_HEADERS = new Set(['x-api-key', 'x-admin-key']);

/** Stands in for the patient identifier, which the simulator never keeps (section 5.4). */
export const REDACTED = '[redacted]';

function loggedBody(request: FastifyRequest): unknown {
  const body = request.body;
  if (
    request.routeOptions.url === '/v1/patient' &&
    typeof body === 'object' &&
    body !== null &&
    'unique_patient_identifier' in body
  ) {
    return { ...body, unique_patient_identifier: REDACTED };
  }
  return body;
}

/**
 * Records every service request (rejected ones too) when it arrives, adds the parsed body once
 * parsing is done and the status (and time) once answered. Admin routes and `/healthz` are not recorded;
 * the patient identifier of a registration is redacted.
 */
export function installRequestRecorder(app: FastifyInstance, log: RequestLog): void {
  const entries = new WeakMap<FastifyRequest, RecordedRequest>();
  app.addHook('onRequest', async (request) => {
    if (isHousekeeping(request)) return;
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name]) => !SECRET_HEADERS.has(name)),
    );
    const entry: RecordedRequest = {
      method: request.method,
      path: request.url,
      status: null,
      headers,
      bodyJson: null,
      received_at: Date.now(),
      answered_at: null,
    };
    entries.set(request, entry);
    log.push(entry);
  });
  app.addHook('preValidation', async (request) => {
    const entry = entries.get(request);
    if (entry !== undefined && request.body !== undefined)
      entry.bodyJson = JSON.stringify(loggedBody(request));
  });
  app.addHook('onResponse', async (request, reply) => {
    const entry = entries.get(request);
    if (entry !== undefined) {
      entry.status = reply.statusCode;
      entry.answered_at = Date.now();
    }
  });
}
