import { IngestHttpError } from './ingest-http-error.ts';
import { REDIS_RETRY_AFTER_S } from './redis-unavailable-error.ts';

/**
 * Other writers kept changing the patient's record while this update was being applied, so it
 * was not stored (nothing changed). Transient: answered 503 with `Retry-After`, so that the sender
 * resends it.
 */
export class CommitConflictError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_COMMIT_CONFLICT';
  readonly code = CommitConflictError.code;
  readonly statusCode = 503;
  override readonly name = 'CommitConflictError';

  constructor(attempts: number) {
    super(`the record kept changing during ${attempts} attempts to apply the update: retry later`);
  }

  override get headers(): Readonly<Record<string, string>> {
    return { 'retry-after': String(REDIS_RETRY_AFTER_S) };
  }
}
