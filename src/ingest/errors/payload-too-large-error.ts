import { IngestHttpError } from './ingest-http-error.ts';

/** The body is larger than `config.ingest.body_limit_bytes`. */
export class PayloadTooLargeError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_PAYLOAD_TOO_LARGE';
  readonly code = PayloadTooLargeError.code;
  readonly statusCode = 413;
  override readonly name = 'PayloadTooLargeError';

  constructor(limitBytes: number, options?: ErrorOptions) {
    super(`request body is larger than ${limitBytes} bytes`, options);
  }
}
