import { ConcordanceError } from '../errors/concordance-error.ts';
/** `OUTBOUND_KEY` is unusable (too short, not base64/hex), or a sealed value opens with no key given. */
export class OutboundKeyError extends ConcordanceError {
  static readonly code = 'ERR_OUTBOUND_KEY';
  readonly code = OutboundKeyError.code;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OutboundKeyError';
  }
}
