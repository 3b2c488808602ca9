import { ServiceError } from './service-error.ts';

/** The client refused the arguments before sending anything. */
export class ServiceParamsError extends ServiceError {
  static readonly code = 'ERR_SERVICE_PARAMS';
  override readonly code = 'ERR_SERVICE_PARAMS';
  override readonly name = 'ServiceParamsError';
}
