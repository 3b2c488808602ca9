import { IngestHttpError } from './ingest-http-error.ts';

/** A body route was called without `Content-Type: application/json` (or the types it takes). */
export class UnsupportedMediaTypeError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_UNSUPPORTED_MEDIA_TYPE';
  readonly code = UnsupportedMediaTypeError.code;
  readonly statusCode = 415;
  override readonly name = 'UnsupportedMediaTypeError';

  constructor(options?: ErrorOptions, accepted = 'application/json') {
    super(`Unsupported Media Type: send Content-Type: ${accepted}`, options);
  }
}
