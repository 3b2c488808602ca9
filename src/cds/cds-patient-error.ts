import { ConcordanceError } from '../errors/concordance-error.ts';

/**
 * The Patient's identifiers were needed (the identity settings key a Patient by an identifier) but
 * could not be had: no `prefetch.patient` for the patient in context, and no FHIR server of the
 * client's `fhir_servers` with an access token, or that server failed. CDS Hooks answers 412.
 */
export class CdsPatientUnavailableError extends ConcordanceError {
  static readonly code = 'ERR_CDS_PATIENT_UNAVAILABLE';
  readonly code = CdsPatientUnavailableError.code;
}
