import { ConcordanceError } from '../../errors/concordance-error.ts';

/**
 * `concordance-worker trace` found nothing to show: no receipt under the control id (never
 * received, expired, or the trace is off), or no message kept for the patient (exit 1).
 */
export class TraceNotFoundError extends ConcordanceError {
  static readonly code = 'ERR_TRACE_NOT_FOUND';
  readonly code = TraceNotFoundError.code;
  override readonly name = 'TraceNotFoundError';
}
