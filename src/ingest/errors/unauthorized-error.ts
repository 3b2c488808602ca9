import { IngestHttpError } from './ingest-http-error.ts';

/** No bearer token, or one that is not among `config.ingest.tokens`. */
export class UnauthorizedError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_UNAUTHORIZED';
  readonly code = UnauthorizedError.code;
  readonly statusCode = 401;
  override readonly name = 'UnauthorizedError';

  override get headers(): Readonly<Record<string, string>> {
    // RFC 6750: a 401 names the scheme the client should use.
    return { 'www-authenticate': 'Bearer' };
  }
}
