import { ValidationErrorBodySchema } from '../interface/validation-error.ts';
import { ServiceAuthError } from './errors/service-auth-error.ts';
import { ServiceBadResponseError } from './errors/service-bad-response-error.ts';
import type { ServiceError, ServiceErrorDetails } from './errors/service-error.ts';
import { ServiceNotFoundError } from './errors/service-not-found-error.ts';
import { ServiceRateLimitedError } from './errors/service-rate-limited-error.ts';
import { ServiceRequestError } from './errors/service-request-error.ts';
import { ServiceUnavailableError } from './errors/service-unavailable-error.ts';
import { ServiceValidationError } from './errors/service-validation-error.ts';

/** What is known about an answer that was not 2xx. */
export interface FailedResponse {
  status: number;
  /** Already-parsed `Retry-After`, in milliseconds. */
  retryAfterMs: number | undefined;
  /** Raw response body; only the 422 items are read from it, never copied into a message. */
  body: string;
  requestId: string;
  endpoint: string;
}

/** Turns a non-2xx answer into the matching {@link ServiceError}. */
export function errorFromResponse(response: FailedResponse): ServiceError {
  const { status, endpoint } = response;
  const details: ServiceErrorDetails = { status, requestId: response.requestId, endpoint };
  const where = `${endpoint} answered ${status}`;
  if (status === 401 || status === 403) {
    return new ServiceAuthError(`${where}: the API key was refused`, details);
  }
  if (status === 404) return new ServiceNotFoundError(`${where}: not found`, details);
  if (status === 422) {
    const items = validationItems(response.body);
    const locs = items
      .slice(0, 5)
      .map((item) => item.loc.join('.'))
      .join(', ');
    return new ServiceValidationError(
      `${where}: validation failed${locs === '' ? '' : ` at ${locs}`}`,
      { ...details, items },
    );
  }
  if (status === 429) {
    const wait =
      response.retryAfterMs === undefined ? '' : ` (retry after ${response.retryAfterMs} ms)`;
    return new ServiceRateLimitedError(`${where}: rate limited${wait}`, {
      ...details,
      retryAfterMs: response.retryAfterMs,
    });
  }
  if (status >= 500 && status <= 599) {
    return new ServiceUnavailableError(`${where}: service unavailable`, details);
  }
  if (status >= 400 && status <= 499) {
    return new ServiceRequestError(`${where}: request rejected`, details);
  }
  // 1xx/3xx: redirects are not followed (they could carry the API key elsewhere).
  return new ServiceBadResponseError(`${where}: unexpected status`, details);
}

/** The documented `{detail: [{loc, msg, type}]}`, reduced to those three fields per item. */
function validationItems(body: string): ServiceValidationError['items'] {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return [];
  }
  const parsed = ValidationErrorBodySchema.safeParse(json);
  if (!parsed.success) return [];
  return parsed.data.detail.map(({ loc, msg, type }) => ({ loc, msg, type }));
}
