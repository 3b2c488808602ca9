import { IngestHttpError } from './ingest-http-error.ts';

/** A batch of record updates holds more items than `config.ingest.batch.max_items`. */
export class BatchTooLargeError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_BATCH_TOO_LARGE';
  readonly code = BatchTooLargeError.code;
  readonly statusCode = 413;
  override readonly name = 'BatchTooLargeError';

  constructor(maxItems: number, options?: ErrorOptions) {
    super(`a batch holds at most ${maxItems} updates: split it`, options);
  }
}
