import { IngestHttpError } from './ingest-http-error.ts';

/** The methods the read-only queue view answers; any other is refused with a ReadOnlyError. */
export const READ_METHODS: readonly string[] = ['GET', 'HEAD'];

/**
 * A change asked of the read-only queue view (retry, clean, remove, pause, …): the view only
 * reads, so that it cannot take jobs out of step with the delivery and query state machines.
 */
export class ReadOnlyError extends IngestHttpError {
  static readonly code = 'ERR_QUEUE_VIEW_READ_ONLY';
  readonly code = ReadOnlyError.code;
  readonly statusCode = 405;
  override readonly name = 'ReadOnlyError';

  constructor(options?: ErrorOptions) {
    super('the queue view is read-only', options);
  }

  /** RFC 9110: a 405 lists what the resource does allow. */
  override get headers(): Readonly<Record<string, string>> {
    return { allow: READ_METHODS.join(', ') };
  }
}
