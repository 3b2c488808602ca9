import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { RedisClient } from '../queues/redis-client.ts';
import { BadRequestError } from './errors/bad-request-error.ts';
import { ClientError } from './errors/client-error.ts';
import { IngestHttpError } from './errors/ingest-http-error.ts';
import { InternalServerError } from './errors/internal-server-error.ts';
import { NotFoundError } from './errors/not-found-error.ts';
import { PayloadTooLargeError } from './errors/payload-too-large-error.ts';
import { RedisUnavailableError } from './errors/redis-unavailable-error.ts';
import { UnsupportedMediaTypeError } from './errors/unsupported-media-type-error.ts';
import { isRedisUnavailable } from './redis-failure.ts';

export interface ErrorHandlerOptions {
  /** The request connection: a failure while it is not ready is answered 503, not 500. */
  redis: Pick<RedisClient, 'status'>;
  bodyLimitBytes: number;
}

/** Turns whatever a route, hook or fastify itself threw into one of our HTTP errors. */
export function toIngestHttpError(
  error: unknown,
  { redis, bodyLimitBytes }: ErrorHandlerOptions,
): IngestHttpError {
  if (error instanceof IngestHttpError) return error;
  const fastifyError = error as Partial<FastifyError>;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaTypeError({ cause: error });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeError(bodyLimitBytes, { cause: error });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new BadRequestError('malformed JSON body: the body is empty', { cause: error });
  }
  if (isRedisUnavailable(error)) return new RedisUnavailableError({ cause: error });
  const status = fastifyError.statusCode;
  if (status === 400)
    return new BadRequestError('malformed request or JSON body', { cause: error });
  if (status === 404) return new NotFoundError('Not Found', { cause: error });
  if (status !== undefined && status > 400 && status < 500) {
    // Fastify's other client errors (405, 406, 414, …): their messages hold no request data.
    return new ClientError(status, fastifyError.message ?? 'bad request', { cause: error });
  }
  // An error nobody recognised, while the connection is down, is Redis's doing nonetheless
  // (BullMQ and ioredis word some failures in ways no list keeps up with).
  if (redis.status !== 'ready') return new RedisUnavailableError({ cause: error });
  return new InternalServerError({ cause: error });
}

/** What of an error may be logged: its kind, never request data. */
function summary(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error };
  return {
    type: error.name,
    code: (error as { code?: unknown }).code,
    message: error.message,
    stack: error.stack,
  };
}

/** The app's error handler: answers in the interface's `{detail}` format and logs server errors. */
export function createErrorHandler(options: ErrorHandlerOptions) {
  return function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply) {
    // A route may take larger bodies than the app (the batch route): its own limit is the one.
    const bodyLimitBytes = request.routeOptions.bodyLimit ?? options.bodyLimitBytes;
    const http = toIngestHttpError(error, { ...options, bodyLimitBytes });
    // Below info the request has no child logger of its own (see buildIngestApp): name it here.
    const log = request.log as Logger;
    const id = log.isLevelEnabled('info') ? {} : { reqId: request.id };
    if (http instanceof RedisUnavailableError) {
      log.warn({ ...id, err: summary(http.cause) }, 'redis unavailable');
    } else if (http.statusCode >= 500) {
      log.error({ ...id, err: summary(http.cause ?? error) }, 'request failed');
    }
    return reply.code(http.statusCode).headers(http.headers).send(http.body);
  };
}
