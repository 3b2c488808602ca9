import { IdentifierLeakError } from '../records/prepare-for-service.ts';
import { PreventNoDataError } from '../records/prevent-payload.ts';
import { PreventNotConfiguredError } from './prevent-run.ts';
import { RecordNotAssemblableError } from '../records/assemble-patient.ts';
import type { ConcordanceJob } from '../service/create-service-client.ts';
import { ServiceAuthError } from '../service/errors/service-auth-error.ts';
import { ServiceError } from '../service/errors/service-error.ts';
import { ServiceNotFoundError } from '../service/errors/service-not-found-error.ts';
import { ServiceRateLimitedError } from '../service/errors/service-rate-limited-error.ts';
import { ServiceTimeoutError } from '../service/errors/service-timeout-error.ts';
import { ServiceUnavailableError } from '../service/errors/service-unavailable-error.ts';
import { ServiceValidationError } from '../service/errors/service-validation-error.ts';
import type { PollAnswer, SubmitFailure } from './query-lifecycle.ts';
import { isResultErrorCode, type ResultErrorCode } from './result-error-codes.ts';

/**
 * The service client's answers and errors as the query lifecycle sees them. Anything that is not
 * one of the service's (or the record's) known errors is not classified: the caller rethrows it.
 */

/** A poll's answer; `undefined` for an error that is none of the service's. */
export function pollAnswerOf(
  result: ConcordanceJob | unknown,
  failed: boolean,
): PollAnswer | undefined {
  if (!failed) {
    const job = result as ConcordanceJob;
    if (job.state === 'success') return { kind: 'success', concordance: job.concordance };
    if (job.state === 'failure') {
      return { kind: 'failure', status: job.status, concordance: job.concordance };
    }
    if (job.state === 'lost') return { kind: 'lost' };
    return job.retryAfterMs === undefined
      ? { kind: 'pending' }
      : { kind: 'pending', retryAfterMs: job.retryAfterMs };
  }
  const err = result;
  if (err instanceof ServiceNotFoundError) return { kind: 'lost' };
  if (err instanceof ServiceRateLimitedError) {
    return err.retryAfterMs === undefined
      ? { kind: 'rate_limited' }
      : { kind: 'rate_limited', retryAfterMs: err.retryAfterMs };
  }
  if (err instanceof ServiceAuthError) return { kind: 'auth_refused' };
  if (err instanceof ServiceError) return { kind: 'error' };
  return undefined;
}

const codeOf = (err: { code: string }): ResultErrorCode =>
  isResultErrorCode(err.code) ? err.code : 'ERR_QUERY_INTERNAL';

/** A failed submission (or its preparation); `undefined` for an error nobody expected. */
export function submitFailureOf(err: unknown): SubmitFailure | undefined {
  if (err instanceof RecordNotAssemblableError && err.reason === 'birth_date_missing') {
    return { kind: 'birth_date_missing' };
  }
  if (
    err instanceof IdentifierLeakError ||
    err instanceof RecordNotAssemblableError ||
    err instanceof PreventNoDataError
  ) {
    return { kind: 'refused', code: err.code, message: err.message };
  }
  if (err instanceof PreventNotConfiguredError) {
    return { kind: 'permanent', code: err.code, message: err.message };
  }
  if (err instanceof ServiceValidationError) {
    return { kind: 'refused', code: err.code, message: err.message, items: err.items };
  }
  if (!(err instanceof ServiceError)) return undefined;
  if (err instanceof ServiceRateLimitedError) {
    return err.retryAfterMs === undefined
      ? { kind: 'rate_limited' }
      : { kind: 'rate_limited', retryAfterMs: err.retryAfterMs };
  }
  if (err instanceof ServiceAuthError) return { kind: 'auth_refused' };
  const code = codeOf(err);
  return err.transient
    ? { kind: 'transient', code, message: err.message }
    : { kind: 'permanent', code, message: err.message };
}

/** Network errors raised before a connection exists (refused, no address, no route). */
const NEVER_CONNECTED: ReadonlySet<unknown> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/**
 * True when a submission failed without any answer in a way that may have let it reach the
 * service (a timeout, a reset connection): a refused connection, a failed name lookup and
 * arguments the client refused before sending never reached it.
 */
export function mayHaveReachedService(err: unknown): boolean {
  if (!(err instanceof ServiceTimeoutError || err instanceof ServiceUnavailableError)) return false;
  if (err.status !== undefined) return false;
  const cause = err.cause as { code?: unknown } | undefined;
  return !NEVER_CONNECTED.has(cause?.code);
}
