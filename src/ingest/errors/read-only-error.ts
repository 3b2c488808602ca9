import { IngestHttpError } from './ingest-http-error.ts';

/**
 * A change asked of the read-only queue view (retry, clean, remove, pause, …): the view only
 * reads, so that it cannot take jobs out of step with the delivery and query state machines.
 */
export class ReadOnlyError extends IngestHttpError {
  static readonly code = 'ERR_QUEUE_VIEW_READ_ONLY';
  readonly code = ReadOnlyError.code;
  readonly statusCode = 405;
  override readonly name = 'ReadOnlyError';

  override get headers(): Readonly<Record<string, string>> {
    return { allow: 'GET, HEAD' };
  }
}
