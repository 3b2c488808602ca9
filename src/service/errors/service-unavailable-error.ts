import { ServiceError } from './service-error.ts';

/** The service answered 5xx, or could not be reached at all (connection refused, reset, DNS). */
export class ServiceUnavailableError extends ServiceError {
  static readonly code = 'ERR_SERVICE_UNAVAILABLE';
  override readonly code = 'ERR_SERVICE_UNAVAILABLE';
  override readonly name = 'ServiceUnavailableError';

  override readonly transient = true;
}
