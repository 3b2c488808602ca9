import type { ValidationErrorItem } from '../../interface/validation-error.ts';
import { ConcordanceError } from '../../errors/concordance-error.ts';

/** The interface's error bodies: validation items (422) or a human-readable message. */
export type ErrorBody = { detail: ValidationErrorItem[] } | { detail: string };

/**
 * Base of every error the ingest app answers on purpose. `statusCode`, `headers` and `body` say
 * exactly what goes out, so the error handler needs no knowledge of the individual classes.
 * Messages never carry a patient id or record content: they may end up in logs.
 */
export abstract class IngestHttpError extends ConcordanceError {
  abstract override readonly code: string;
  abstract readonly statusCode: number;

  /** Response headers that belong to this error (`WWW-Authenticate`, `Retry-After`). */
  get headers(): Readonly<Record<string, string>> {
    return {};
  }

  get body(): ErrorBody {
    return { detail: this.message };
  }
}
