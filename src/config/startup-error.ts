import { ConcordanceError } from '../errors/concordance-error.ts';
/** The process cannot start as configured; the message says what to set. */
export class StartupError extends ConcordanceError {
  static readonly code = 'ERR_STARTUP';
  readonly code = StartupError.code;

  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}
