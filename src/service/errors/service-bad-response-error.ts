import { ServiceError } from './service-error.ts';

/** The response was not JSON, did not match its schema, or had an unexpected status (1xx/3xx). */
export class ServiceBadResponseError extends ServiceError {
  static readonly code = 'ERR_SERVICE_BAD_RESPONSE';
  override readonly code = 'ERR_SERVICE_BAD_RESPONSE';
  override readonly name = 'ServiceBadResponseError';
}
