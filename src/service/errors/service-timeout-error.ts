import { ServiceError } from './service-error.ts';

/** No complete response within `timeoutMs`. For a POST the outcome is unknown: the service may have acted on it. */
export class ServiceTimeoutError extends ServiceError {
  static readonly code = 'ERR_SERVICE_TIMEOUT';
  override readonly code = 'ERR_SERVICE_TIMEOUT';
  override readonly name = 'ServiceTimeoutError';

  override readonly transient = true;
}
