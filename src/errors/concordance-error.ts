/**
 * The one error family of concordance-worker: every error the project throws on purpose is a
 * ConcordanceError with a stable `code` (`ERR_...`, what logs, metrics and the hospital's code
 * match on; the message is for people and may change) and, where another error led to it, its
 * `cause`. The families below it — ServiceError (the service client), IngestHttpError (HTTP
 * answers of the ingest API, in the interface's `{detail}` format) — add what their callers need.
 * `src/errors/error-family.test.ts` checks that no error class stands outside the family.
 */
export abstract class ConcordanceError extends Error {
  /** Stable, `ERR_` followed by upper-case words. */
  abstract readonly code: string;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** True for an error of the family (of this copy of the code or of another). */
export function isConcordanceError(err: unknown): err is ConcordanceError {
  return (
    err instanceof ConcordanceError ||
    (err instanceof Error &&
      'code' in err &&
      typeof err.code === 'string' &&
      err.code.startsWith('ERR_'))
  );
}
