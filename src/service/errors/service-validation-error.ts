import { ServiceError, type ServiceErrorDetails } from './service-error.ts';

/** One problem the service found, reduced to the documented fields. */
export interface ServiceValidationItem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/**
 * The service rejected the request's parameters or body (422). `items` keeps only `loc`, `msg`
 * and `type`: services of this kind also echo the offending `input`, which may be patient data.
 */
export class ServiceValidationError extends ServiceError {
  static readonly code = 'ERR_SERVICE_VALIDATION';
  override readonly code = 'ERR_SERVICE_VALIDATION';
  override readonly name = 'ServiceValidationError';
  readonly items: ServiceValidationItem[];

  constructor(message: string, details: ServiceErrorDetails & { items?: ServiceValidationItem[] }) {
    super(message, details);
    this.items = details.items ?? [];
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), items: this.items };
  }
}
