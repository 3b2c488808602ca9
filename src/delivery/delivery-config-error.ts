import { ConcordanceError } from '../errors/concordance-error.ts';
/** The delivery configuration cannot work as given (e.g. a webhook URL without a secret). */
export class DeliveryConfigError extends ConcordanceError {
  static readonly code = 'ERR_DELIVERY_CONFIG';
  readonly code = DeliveryConfigError.code;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DeliveryConfigError';
  }
}
