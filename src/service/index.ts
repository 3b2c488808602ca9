/** The public surface of the Clinical Graph Service client. */
export {
  createServiceClient,
  type CallOptions,
  type ConcordanceJob,
  type IterateOptions,
  type JobState,
  type JobStatusSets,
  type RelationshipListParams,
  type RetryOptions,
  type ServiceClient,
  type ServiceClientOptions,
  type ServiceLogger,
  type ServiceResponseInfo,
} from './create-service-client.ts';
export { ServiceError, type ServiceErrorDetails } from './errors/service-error.ts';
export { ServiceAuthError } from './errors/service-auth-error.ts';
export { ServiceBadResponseError } from './errors/service-bad-response-error.ts';
export { ServiceNotFoundError } from './errors/service-not-found-error.ts';
export { ServiceParamsError } from './errors/service-params-error.ts';
export { ServiceRateLimitedError } from './errors/service-rate-limited-error.ts';
export { ServiceRequestError } from './errors/service-request-error.ts';
export { ServiceTimeoutError } from './errors/service-timeout-error.ts';
export { ServiceUnavailableError } from './errors/service-unavailable-error.ts';
export {
  ServiceValidationError,
  type ServiceValidationItem,
} from './errors/service-validation-error.ts';
