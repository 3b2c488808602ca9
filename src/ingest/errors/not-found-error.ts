import { IngestHttpError } from './ingest-http-error.ts';

/** An unknown route, patient or preset. */
export class NotFoundError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_NOT_FOUND';
  readonly code = NotFoundError.code;
  readonly statusCode = 404;
  override readonly name = 'NotFoundError';
}
