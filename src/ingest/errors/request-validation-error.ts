import type { ValidationErrorItem } from '../../interface/validation-error.ts';
import { IngestHttpError, type ErrorBody } from './ingest-http-error.ts';

/**
 * The request's body or path failed validation, or names something that cannot be used (a
 * placeholder CCSR code, a patient with no record). Answered 422 with the interface's
 * `{detail: [{loc, msg, type}]}`, `loc` starting with `body` or `path`.
 */
export class RequestValidationError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_VALIDATION';
  readonly code = RequestValidationError.code;
  readonly statusCode = 422;
  override readonly name = 'RequestValidationError';
  readonly items: readonly ValidationErrorItem[];

  constructor(items: readonly ValidationErrorItem[], options?: ErrorOptions) {
    // The message names locations only: `msg` texts are ours, but values never appear in it.
    super(`invalid request at ${items.map((item) => item.loc.join('.')).join(', ')}`, options);
    this.items = items;
  }

  override get body(): ErrorBody {
    return { detail: [...this.items] };
  }
}
