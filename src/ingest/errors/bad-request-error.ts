import { IngestHttpError } from './ingest-http-error.ts';

/**
 * The request could not be read: malformed JSON, a bad URL, a wrong Content-Length. The message is
 * ours, never the parser's: V8's JSON errors quote a piece of the body, which may hold patient data.
 */
export class BadRequestError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_BAD_REQUEST';
  readonly code = BadRequestError.code;
  readonly statusCode = 400;
  override readonly name = 'BadRequestError';
}
