import { IngestHttpError } from '../errors/ingest-http-error.ts';

/** How long a sender should wait before resending while the FHIR server cannot be read. */
export const FHIR_RETRY_AFTER_S = 30;

/**
 * The FHIR server could not give what a notification needs (id-only payload, the Patient for the
 * configured identifier system): unreachable, timed out, 5xx, refused our token, or not
 * configured. Answered 503 with `Retry-After`, so that the server sends the notification again.
 * The message names the cause by kind only, never a URL, token or resource.
 */
export class FhirServerUnavailableError extends IngestHttpError {
  static readonly code = 'ERR_INGEST_FHIR_SERVER_UNAVAILABLE';
  readonly code = FhirServerUnavailableError.code;
  readonly statusCode = 503;
  override readonly name = 'FhirServerUnavailableError';

  override get headers(): Readonly<Record<string, string>> {
    return { 'retry-after': String(FHIR_RETRY_AFTER_S) };
  }
}
