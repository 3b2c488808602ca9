import { ConnectionClosedError } from 'bullmq';

/** Socket-level failures: Redis is down, unreachable or dropped the connection. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Error names of ioredis (not exported from its entry point) and BullMQ for a lost connection. */
const UNAVAILABLE_NAMES: ReadonlySet<string> = new Set([
  'MaxRetriesPerRequestError',
  'ConnectionClosedError',
  'ClusterAllFailedError',
]);

/**
 * Messages ioredis rejects commands with when it has no usable connection: with
 * `enableOfflineQueue: false` ("Stream isn't writeable"), after `quit()` ("Connection is closed."),
 * on `commandTimeout` (a hung Redis), when `socketTimeout` dropped the socket; and replies of a Redis that cannot serve yet (`LOADING`, `MASTERDOWN`).
 */
const UNAVAILABLE_MESSAGES =
  /Stream isn't writeable|Connection is closed|Command timed out|^Socket timeout|^LOADING |^MASTERDOWN |^CLUSTERDOWN |^TRYAGAIN /;

/**
 * True when `error`, or an error it wraps (`cause`, `AggregateError.errors`), says that Redis could
 * not be reached, as opposed to a bug or a refused command.
 */
export function isRedisUnavailable(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  if (error instanceof ConnectionClosedError || UNAVAILABLE_NAMES.has(error.name)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (UNAVAILABLE_MESSAGES.test(error.message)) return true;
  if (
    error instanceof AggregateError &&
    error.errors.some((e) => isRedisUnavailable(e, depth + 1))
  ) {
    return true;
  }
  return isRedisUnavailable(error.cause, depth + 1);
}
