import { IngestHttpError } from './ingest-http-error.ts';

/**
 * CDS Hooks' 412: the Patient's identifiers were needed and could not be had (no prefetch, no
 * allowed FHIR server, or that server failed). The message names no patient.
 */
export class CdsPreconditionError extends IngestHttpError {
  static readonly code = 'ERR_CDS_PRECONDITION_FAILED';
  readonly code = CdsPreconditionError.code;
  readonly statusCode = 412;
  override readonly name = 'CdsPreconditionError';
}
