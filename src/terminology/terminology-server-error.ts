import { ConcordanceError } from '../errors/concordance-error.ts';
/**
 * The FHIR terminology server gave no usable `$translate` answer: unreachable, timed out, a non-2xx
 * status, or a body that is not a Parameters resource. The message names the kind of failure
 * only, never the URL, a token or a code.
 */
export class TerminologyServerError extends ConcordanceError {
  static readonly code = 'ERR_TERMINOLOGY_SERVER';
  readonly code = TerminologyServerError.code;
  override readonly name = 'TerminologyServerError';
}
