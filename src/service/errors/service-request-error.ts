import { ServiceError } from './service-error.ts';

/** The service rejected the request with a 4xx other than 401/403/404/422/429 (400, 413, 415...). */
export class ServiceRequestError extends ServiceError {
  static readonly code = 'ERR_SERVICE_REQUEST';
  override readonly code = 'ERR_SERVICE_REQUEST';
  override readonly name = 'ServiceRequestError';
}
