import { ServiceError } from './service-error.ts';

/** The service refused the API key (401) or its scope (403). Retrying does not help. */
export class ServiceAuthError extends ServiceError {
  static readonly code = 'ERR_SERVICE_AUTH';
  override readonly code = 'ERR_SERVICE_AUTH';
  override readonly name = 'ServiceAuthError';
}
