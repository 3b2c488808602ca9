import { IngestHttpError } from './ingest-http-error.ts';

/** Any other 4xx fastify itself raised (405, 406, 414, …), passed on with its own status. */
export class ClientError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_CLIENT';
  readonly code = ClientError.code;
  readonly statusCode: number;
  override readonly name = 'ClientError';

  constructor(statusCode: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.statusCode = statusCode;
  }
}
