import { IngestHttpError } from '../errors/ingest-http-error.ts';
import { FHIR_RETRY_AFTER_S } from './fhir-errors.ts';

/**
 * A FHIR Patient delete reached a process that cannot purge (no patient admin wired): answered
 * 503 with `Retry-After`, so that the server sends it again; nothing changed.
 */
export class FhirDeleteUnavailableError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_FHIR_DELETE_UNAVAILABLE';
  readonly code = FhirDeleteUnavailableError.code;
  readonly statusCode = 503;
  override readonly name = 'FhirDeleteUnavailableError';

  override get headers(): Readonly<Record<string, string>> {
    return { 'retry-after': String(FHIR_RETRY_AFTER_S) };
  }
}
