import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { toValidationItems, type ValidationErrorItem } from '../interface/validation-error.ts';

/** Where a rejected value came from: the first element of each `loc`. */
export type ValueOrigin = 'body' | 'query' | 'path';

export function sendDetail(reply: FastifyReply, status: number, detail: string): FastifyReply {
  return reply.code(status).send({ detail });
}

export function sendValidationItems(
  reply: FastifyReply,
  items: ValidationErrorItem[],
): FastifyReply {
  return reply.code(422).send({ detail: items });
}

/**
 * 422 with the interface's `{detail: [{loc, msg, type}]}`, `loc` starting with the origin. A custom
 * issue may name its FastAPI error type in `params.type` (e.g. `less_than_equal`); others take
 * zod's issue code.
 */
export function sendValidationError(
  reply: FastifyReply,
  origin: ValueOrigin,
  issues: readonly z.core.$ZodIssue[],
  prefix: readonly (string | number)[] = [],
): FastifyReply {
  const items = toValidationItems(issues, [origin, ...prefix]).map((item, i) => {
    const issue = issues[i];
    const type = issue?.code === 'custom' ? issue.params?.type : undefined;
    return typeof type === 'string' ? { ...item, type } : item;
  });
  return sendValidationItems(reply, items);
}

const MESSAGES: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Media Type: send Content-Type: application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'Request body is too large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'Malformed JSON body: the body is empty',
};

/** Every error leaves as JSON `{detail}`; server errors hide their cause. */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'simulator route failed');
    return sendDetail(reply, status, 'Internal Server Error');
  }
  const known = MESSAGES[error.code];
  const detail =
    known ?? (status === 400 ? `Malformed JSON body: ${error.message}` : error.message);
  return sendDetail(reply, status, detail);
}

export function handleNotFound(request: FastifyRequest, reply: FastifyReply) {
  return sendDetail(reply, 404, 'Not Found');
}
