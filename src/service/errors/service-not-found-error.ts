import { ServiceError } from './service-error.ts';

/** The addressed resource does not exist (404). */
export class ServiceNotFoundError extends ServiceError {
  static readonly code = 'ERR_SERVICE_NOT_FOUND';
  override readonly code = 'ERR_SERVICE_NOT_FOUND';
  override readonly name = 'ServiceNotFoundError';
}
