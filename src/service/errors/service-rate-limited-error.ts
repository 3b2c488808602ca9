import { ServiceError, type ServiceErrorDetails } from './service-error.ts';

/** The service asked us to slow down (429). */
export class ServiceRateLimitedError extends ServiceError {
  static readonly code = 'ERR_SERVICE_RATE_LIMITED';
  override readonly code = 'ERR_SERVICE_RATE_LIMITED';
  override readonly name = 'ServiceRateLimitedError';
  /** The wait the service asked for in `Retry-After`, in milliseconds, when it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, details: ServiceErrorDetails & { retryAfterMs?: number } = {}) {
    super(message, details);
    this.retryAfterMs = details.retryAfterMs;
  }

  override readonly transient = true;

  override toJSON(): Record<string, unknown> {
    const json = super.toJSON();
    if (this.retryAfterMs !== undefined) json.retryAfterMs = this.retryAfterMs;
    return json;
  }
}
