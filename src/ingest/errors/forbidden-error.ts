import { IngestHttpError } from './ingest-http-error.ts';

/** A valid token that may not do this (an ingest token on a patient administration route). */
export class ForbiddenError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_FORBIDDEN';
  readonly code = ForbiddenError.code;
  readonly statusCode = 403;
  override readonly name = 'ForbiddenError';
}
