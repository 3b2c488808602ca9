import { IngestHttpError } from './ingest-http-error.ts';

/** A bug: the cause is logged, the caller learns nothing about it. */
export class InternalServerError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_INTERNAL';
  readonly code = InternalServerError.code;
  readonly statusCode = 500;
  override readonly name = 'InternalServerError';

  constructor(options?: ErrorOptions) {
    super('internal server error', options);
  }
}
