import { ConcordanceError } from '../../errors/concordance-error.ts';
/** Storing the message took longer than the handler's deadline. */
export class Hl7v2DeadlineError extends ConcordanceError {
  static readonly code = 'ERR_HL7V2_DEADLINE';
  readonly code = Hl7v2DeadlineError.code;
  override readonly name = 'Hl7v2DeadlineError';

  constructor(ms: number) {
    super(`the message was not stored within ${ms} ms`);
  }
}
