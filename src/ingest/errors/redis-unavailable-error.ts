import { IngestHttpError } from './ingest-http-error.ts';

/** How long a sender should wait before retrying while Redis is unreachable. */
export const REDIS_RETRY_AFTER_S = 5;

/**
 * Redis (or a BullMQ queue on it) could not be reached, so nothing could be made durable. Answered
 * 503 with `Retry-After`, so that the integration engine queues the message and sends it again.
 */
export class RedisUnavailableError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_REDIS_UNAVAILABLE';
  readonly code = RedisUnavailableError.code;
  readonly statusCode = 503;
  override readonly name = 'RedisUnavailableError';

  constructor(options?: ErrorOptions) {
    super('storage is unavailable: retry later', options);
  }

  override get headers(): Readonly<Record<string, string>> {
    return { 'retry-after': String(REDIS_RETRY_AFTER_S) };
  }
}
