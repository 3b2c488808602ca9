import { randomUUID } from 'node:crypto';
import { setTimeout as sleepFor } from 'node:timers/promises';
import got, { RequestError, TimeoutError, type Agents, type Response } from 'got';
import type { z } from 'zod';
import { errorFromResponse } from './error-from-response.ts';
import { ServiceBadResponseError } from './errors/service-bad-response-error.ts';
import type { ServiceError, ServiceErrorDetails } from './errors/service-error.ts';
import { ServiceTimeoutError } from './errors/service-timeout-error.ts';
import { ServiceUnavailableError } from './errors/service-unavailable-error.ts';
import { parseRetryAfter } from './retry-after.ts';
import { nextRetryDelay, type RetryOptions } from './retry-policy.ts';

/** A pino-compatible logger; only these two levels are used. */
export interface ServiceLogger {
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

/** One attempt's outcome, for metrics. */
export interface ServiceResponseInfo {
  /** The route template, e.g. `GET /v1/concordance/{job_id}`: never an id, so labels stay few. */
  endpoint: string;
  method: string;
  status: number | 'network' | 'timeout';
  durationMs: number;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  retry: Required<RetryOptions>;
  userAgent: string;
  logger: ServiceLogger | undefined;
  onResponse: ((info: ServiceResponseInfo) => void) | undefined;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Outbound agents (proxy, CA bundle); undefined keeps got's defaults. */
  agent?: Agents | undefined;
}

export interface ServiceCall<T> {
  method: 'GET' | 'POST';
  /** Route template for errors, logs and metrics. */
  endpoint: string;
  /** Path with its parameters already filled in and URL-encoded. */
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  schema: z.ZodType<T>;
  signal?: AbortSignal | undefined;
}

/** Status codes worth another GET: overload and gateway trouble, not server bugs (500). */
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

/** Connection-level failures that may heal; TLS and URL errors will not, so they fail at once. */
const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'UND_ERR_SOCKET',
]);

/**
 * Sends one logical call: adds the headers, applies the timeout, retries GETs, checks the answer
 * against its schema. got's own retry is off (`limit: 0`) and this loop decides instead: the
 * decision is then one pure function ({@link nextRetryDelay}) with its own tests, the wait goes
 * through an injectable `sleep` (so tests see the delays asked for, without waiting or timing),
 * and every attempt is reported to `onResponse` exactly once.
 */
export class ServiceTransport {
  readonly #options: TransportOptions;
  readonly #base: string;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#base = options.baseUrl.replace(/\/+$/, '');
  }

  async call<T>(call: ServiceCall<T>): Promise<T> {
    // One id for every attempt, so the service's logs tie the retries of one call together.
    const requestId = randomUUID();
    const { retry, sleep, logger } = this.#options;
    for (let retries = 0; ; retries++) {
      call.signal?.throwIfAborted();
      const outcome = await this.#attempt(call, requestId);
      if (outcome.ok) return parseBody(outcome.response, call, requestId);
      const delay = nextRetryDelay(
        {
          method: call.method,
          retryable: outcome.retryable,
          retries,
          retryAfterMs: outcome.retryAfterMs,
        },
        retry,
      );
      if (delay === undefined) throw outcome.error;
      logger?.debug?.(
        {
          endpoint: call.endpoint,
          requestId,
          code: outcome.error.code,
          status: outcome.error.status,
          retry: retries + 1,
          delayMs: delay,
        },
        'retrying service request',
      );
      await sleep(delay, call.signal);
    }
  }

  async #attempt<T>(call: ServiceCall<T>, requestId: string): Promise<Attempt> {
    const { apiKey, userAgent, timeoutMs } = this.#options;
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': userAgent,
      'x-api-key': apiKey,
      'x-request-id': requestId,
    };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const started = performance.now();
    let response: Response<string>;
    try {
      response = await got(`${this.#base}${call.path}`, {
        method: call.method,
        headers,
        searchParams: call.query,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        responseType: 'text',
        throwHttpErrors: false,
        // A redirect to another host would carry the API key along.
        followRedirect: false,
        retry: { limit: 0 },
        timeout: { request: timeoutMs },
        signal: call.signal,
        ...(this.#options.agent === undefined ? {} : { agent: this.#options.agent }),
      });
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      const failure = failureOf(error, call, requestId, timeoutMs);
      this.#report(call, failure.status, started);
      return failure;
    }
    this.#report(call, response.statusCode, started);
    if (response.statusCode >= 200 && response.statusCode <= 299) return { ok: true, response };
    const retryAfterMs = parseRetryAfter(response.headers['retry-after']);
    return {
      ok: false,
      error: errorFromResponse({
        status: response.statusCode,
        retryAfterMs,
        body: response.body,
        requestId,
        endpoint: call.endpoint,
      }),
      retryable: RETRYABLE_STATUSES.has(response.statusCode),
      retryAfterMs,
    };
  }

  #report(
    call: ServiceCall<unknown>,
    status: ServiceResponseInfo['status'],
    started: number,
  ): void {
    const { onResponse, logger } = this.#options;
    if (onResponse === undefined) return;
    try {
      onResponse({
        endpoint: call.endpoint,
        method: call.method,
        status,
        durationMs: performance.now() - started,
      });
    } catch (error) {
      // Metrics must never fail a call.
      logger?.warn({ err: error, endpoint: call.endpoint }, 'onResponse hook threw');
    }
  }
}

type Attempt =
  | { ok: true; response: Response<string> }
  | {
      ok: false;
      error: ServiceError;
      retryable: boolean;
      retryAfterMs: number | undefined;
      status?: 'network' | 'timeout';
    };

/** Maps a got failure (no HTTP answer at all) onto our errors. */
function failureOf(
  error: unknown,
  call: ServiceCall<unknown>,
  requestId: string,
  timeoutMs: number,
): Attempt & { ok: false; status: 'network' | 'timeout' } {
  if (!(error instanceof RequestError)) throw error;
  const details: ServiceErrorDetails = {
    requestId,
    endpoint: call.endpoint,
    cause: sanitised(error),
  };
  if (error instanceof TimeoutError) {
    const unknownOutcome = call.method === 'GET' ? '' : '; the service may still act on it';
    return {
      ok: false,
      status: 'timeout',
      retryable: true,
      retryAfterMs: undefined,
      error: new ServiceTimeoutError(
        `${call.endpoint} got no response within ${timeoutMs} ms${unknownOutcome}`,
        details,
      ),
    };
  }
  return {
    ok: false,
    status: 'network',
    retryable: RETRYABLE_NETWORK_CODES.has(error.code),
    retryAfterMs: undefined,
    error: new ServiceUnavailableError(
      `${call.endpoint} could not be reached (${error.code})`,
      details,
    ),
  };
}

/**
 * A got error holds its request options — headers with the API key, and the body — so only its
 * name, code and message are kept.
 */
function sanitised(error: RequestError): Error {
  return Object.assign(new Error(error.message), { name: error.name, code: error.code });
}

function parseBody<T>(response: Response<string>, call: ServiceCall<T>, requestId: string): T {
  const details: ServiceErrorDetails = {
    status: response.statusCode,
    requestId,
    endpoint: call.endpoint,
  };
  let json: unknown;
  try {
    json = JSON.parse(response.body);
  } catch {
    // JSON.parse quotes the text it choked on; the body is never repeated, so no cause.
    throw new ServiceBadResponseError(
      `${call.endpoint} answered with a body that is not JSON`,
      details,
    );
  }
  const parsed = call.schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const paths = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.map(String).join('.') || '(root)'} (${issue.code})`)
    .join(', ');
  throw new ServiceBadResponseError(
    `${call.endpoint} answered with a body that does not match its schema: ${paths}`,
    details,
  );
}

/** The default wait between retries: a timer that a caller's abort signal cuts short. */
export async function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleepFor(ms, undefined, { signal });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}
