import { ConcordanceError } from '../errors/concordance-error.ts';
/** An administrative action named a patient id the crosswalk has never seen. */
export class UnknownPatientError extends ConcordanceError {
  static readonly code = 'ERR_UNKNOWN_PATIENT';
  readonly code = UnknownPatientError.code;
  override readonly name = 'UnknownPatientError';
  /** The audit entry's request id; the message never carries the patient id. */
  readonly requestId: string;

  constructor(requestId: string) {
    super('unknown patient');
    this.requestId = requestId;
  }
}
