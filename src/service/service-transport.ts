import { randomUUID } from 'node:crypto';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { interceptors, Pool, type Dispatcher } from 'undici';
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
  /**
   * pino's level check. When present, a debug message (and the object it logs) is only built if
   * it answers true, so a retry costs nothing extra at `info`.
   */
  isLevelEnabled?(level: string): boolean;
}

/** One attempt's outcome, for metrics. */
export interface ServiceResponseInfo {
  /** The route template, e.g. `GET /v1/concordance/{job_id}`: never an id, so labels stay few. */
  endpoint: string;
  method: string;
  status: number | 'network' | 'timeout';
  durationMs: number;
  /** The service's `host[:port]` (never a path, a query or a credential). */
  host: string;
  /**
   * The failure's code when no HTTP answer came (`status` network or timeout): `ECONNREFUSED`,
   * `ENOTFOUND`, `ETIMEDOUT`, `UND_ERR_SOCKET`, ...
   */
  code?: string;
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
  /**
   * The undici dispatcher to send through (proxy, CA bundle: see `outboundDispatcher`).
   * @defaultValue a keep-alive {@link Pool} of this transport's own for the base URL's origin
   */
  dispatcher?: Dispatcher | undefined;
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
  /** Told the `Retry-After` of the 2xx answer (ms), when it carries one (a pending job's hint). */
  onRetryAfter?: (ms: number) => void;
}

/** What got asked for, and what undici's `decompress` interceptor unpacks. */
const ACCEPT_ENCODING = 'gzip, deflate, br, zstd';

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
 * undici's own timers. The transport turns off the header and body ones per request and gives its
 * own pool a connect timeout of `timeoutMs`; a dispatcher passed in may still run them (a connect
 * gives up after 10 s by default), and they mean what the transport's clock means: a timeout.
 */
const UNDICI_TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** What came back from the service (or, for a 407, from a forwarding proxy). */
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends one logical call: adds the headers, applies the timeout, retries GETs, checks the answer
 * against its schema. The decision to retry is one pure function ({@link nextRetryDelay}) with its
 * own tests, the wait goes through an injectable `sleep` (so tests see the delays asked for,
 * without waiting or timing), and every attempt is reported to `onResponse` exactly once.
 *
 * The requests go out with undici's `request()` on a keep-alive {@link Pool} for the service's
 * origin (or on the dispatcher passed in, which carries the proxy and the CA bundle). undici
 * rather than got, which the other outbound clients keep (calls there are few): this client makes
 * most of a worker's HTTP calls (a concordance job is polled until it settles), and got's layers
 * (hooks, option merging, a Node.js `http` request and its streams per attempt) cost about five
 * times the client-side CPU per call (`bench/service-client-cpu.ts`: 287 against 61 µs); a worker
 * used a third less CPU with undici's pool. Nothing that got did for us is lost: redirects are not
 * followed (undici does not follow them either; one to another host would carry the API key
 * along), the per-attempt timeout is the transport's own timer from sending to the last byte of
 * the body (got's `timeout.request`; undici's header and body timers are off), there is no retry
 * below this loop, and compressed answers are asked for and unpacked (undici's `decompress`
 * interceptor) as got did. What differs: a connection closed in the middle of a body is undici's
 * `UND_ERR_SOCKET`, retried for a GET, where got reported a `Content-Length` mismatch and gave up.
 */
export class ServiceTransport {
  readonly #options: TransportOptions;
  readonly #base: string;
  readonly #origin: string;
  readonly #host: string;
  readonly #dispatcher: Dispatcher;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#origin = new URL(this.#base).origin;
    this.#host = new URL(this.#base).host;
    const base =
      options.dispatcher ?? new Pool(this.#origin, { connect: { timeout: options.timeoutMs } });
    // got asked for compressed answers and unpacked them, error answers (a 422's items) included.
    this.#dispatcher = base.compose(interceptors.decompress({ skipErrorResponses: false }));
  }

  async call<T>(call: ServiceCall<T>): Promise<T> {
    // One id for every attempt, so the service's logs tie the retries of one call together.
    const requestId = randomUUID();
    const { retry, sleep, logger } = this.#options;
    for (let retries = 0; ; retries++) {
      call.signal?.throwIfAborted();
      const outcome = await this.#attempt(call, requestId);
      if (outcome.ok) {
        if (call.onRetryAfter !== undefined) {
          const hint = parseRetryAfter(outcome.answer.headers['retry-after']);
          if (hint !== undefined) call.onRetryAfter(hint);
        }
        return parseBody(outcome.answer, call, requestId);
      }
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
      if (logger?.debug !== undefined && logger.isLevelEnabled?.('debug') !== false) {
        logger.debug(
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
      }
      await sleep(delay, call.signal);
    }
  }

  async #attempt<T>(call: ServiceCall<T>, requestId: string): Promise<Attempt> {
    const started = performance.now();
    let answer: Answer;
    try {
      answer = await this.#send(call, requestId);
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      const refused = proxyAuthRefusal(error);
      if (refused === undefined) {
        const failure = failureOf(error, call, requestId, this.#options.timeoutMs);
        this.#report(call, failure.status, started, failure.code);
        return failure;
      }
      answer = refused;
    }
    this.#report(call, answer.status, started);
    if (answer.status >= 200 && answer.status <= 299) return { ok: true, answer };
    const retryAfterMs = parseRetryAfter(answer.headers['retry-after']);
    return {
      ok: false,
      error: errorFromResponse({
        status: answer.status,
        retryAfterMs,
        body: answer.body,
        requestId,
        endpoint: call.endpoint,
      }),
      retryable: RETRYABLE_STATUSES.has(answer.status),
      retryAfterMs,
    };
  }

  /**
   * One request and its whole body, within `timeoutMs`. A timeout rejects with
   * {@link AttemptTimeout}; the caller's abort with whatever undici makes of the signal's reason.
   */
  async #send(call: ServiceCall<unknown>, requestId: string): Promise<Answer> {
    const { apiKey, userAgent, timeoutMs } = this.#options;
    const headers: Record<string, string> = {
      accept: 'application/json',
      'accept-encoding': ACCEPT_ENCODING,
      'user-agent': userAgent,
      'x-api-key': apiKey,
      'x-request-id': requestId,
    };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new AttemptTimeout(timeoutMs)), timeoutMs);
    const { signal } = call;
    const forwardAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', forwardAbort, { once: true });
    try {
      const response = await this.#dispatcher.request({
        origin: this.#origin,
        path: this.#pathOf(call),
        method: call.method,
        headers,
        body: call.body === undefined ? null : JSON.stringify(call.body),
        signal: controller.signal,
        // The timer above is the one clock; undici's per-phase timers would only cut it short.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      const body = await response.body.text();
      return { status: response.statusCode, headers: response.headers, body };
    } catch (error) {
      // However undici words an abort, the timer's own reason tells a timeout apart.
      const { reason } = controller.signal;
      throw reason instanceof AttemptTimeout ? reason : error;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', forwardAbort);
    }
  }

  /**
   * The request target, as got built it: the base URL and the path resolved as one WHATWG URL
   * (so a `..` segment is resolved, not sent), and a non-empty query string replacing the search.
   */
  #pathOf(call: ServiceCall<unknown>): string {
    const url = new URL(`${this.#base}${call.path}`);
    const query = call.query?.toString();
    if (query === undefined) return `${url.pathname}${url.search}`;
    return query === '' ? url.pathname : `${url.pathname}?${query}`;
  }

  #report(
    call: ServiceCall<unknown>,
    status: ServiceResponseInfo['status'],
    started: number,
    code?: string,
  ): void {
    const { onResponse, logger } = this.#options;
    if (onResponse === undefined) return;
    try {
      onResponse({
        endpoint: call.endpoint,
        method: call.method,
        status,
        durationMs: performance.now() - started,
        host: this.#host,
        ...(code === undefined ? {} : { code }),
      });
    } catch (error) {
      // Metrics must never fail a call.
      logger?.warn({ err: error, endpoint: call.endpoint }, 'onResponse hook threw');
    }
  }
}

/** The reason an attempt's own timer aborts it with. */
class AttemptTimeout extends Error {
  override readonly name = 'AttemptTimeout';
  readonly code = 'ETIMEDOUT';

  constructor(timeoutMs: number) {
    super(`no complete answer within ${timeoutMs} ms`);
  }
}

interface Failure {
  ok: false;
  error: ServiceError;
  retryable: boolean;
  retryAfterMs: number | undefined;
  status?: 'network' | 'timeout';
}

type Attempt = { ok: true; answer: Answer } | Failure;

/**
 * A forwarding proxy's 407 (wrong or missing proxy credentials) as the answer it is. Node's
 * built-in proxy support, which got used, hands it back like any response; undici's forwarding
 * wrapper turns it into an `InvalidArgumentError` instead, recognised here by its code and its
 * "(407)". (A CONNECT tunnel refused with 407 stays a network error, as it was.)
 */
function proxyAuthRefusal(error: unknown): Answer | undefined {
  const { code, message } = error instanceof Error ? (error as Error & { code?: unknown }) : {};
  if (code !== 'UND_ERR_INVALID_ARG' || !message?.includes('Proxy Authentication Required (407)')) {
    return undefined;
  }
  return { status: 407, headers: {}, body: '' };
}

/** Maps a failure without an HTTP answer (connection, TLS, timeout) onto our errors. */
function failureOf(
  error: unknown,
  call: ServiceCall<unknown>,
  requestId: string,
  timeoutMs: number,
): Failure & { status: 'network' | 'timeout'; code: string } {
  const cause = sanitised(error);
  const details: ServiceErrorDetails = { requestId, endpoint: call.endpoint, cause };
  if (error instanceof AttemptTimeout || UNDICI_TIMEOUT_CODES.has(cause.code)) {
    const unknownOutcome = call.method === 'GET' ? '' : '; the service may still act on it';
    const within = error instanceof AttemptTimeout ? `within ${timeoutMs} ms` : `(${cause.code})`;
    return {
      ok: false,
      status: 'timeout',
      code: error instanceof AttemptTimeout ? 'ETIMEDOUT' : cause.code,
      retryable: true,
      retryAfterMs: undefined,
      error: new ServiceTimeoutError(
        `${call.endpoint} got no response ${within}${unknownOutcome}`,
        details,
      ),
    };
  }
  return {
    ok: false,
    status: 'network',
    code: cause.code,
    retryable: RETRYABLE_NETWORK_CODES.has(cause.code),
    retryAfterMs: undefined,
    error: new ServiceUnavailableError(
      `${call.endpoint} could not be reached (${cause.code})`,
      details,
    ),
  };
}

/**
 * Only the name, code and message of a failure are kept: an undici error may hold its socket, and
 * nothing that could reach the request's headers (the API key) or body may ride along.
 */
function sanitised(error: unknown): Error & { code: string } {
  const { name, message, code }: Error & { code?: unknown } =
    error instanceof Error ? error : new Error(String(error));
  return Object.assign(new Error(message), {
    name,
    code: typeof code === 'string' ? code : 'ERR_SERVICE_REQUEST_FAILED',
  });
}

function parseBody<T>(answer: Answer, call: ServiceCall<T>, requestId: string): T {
  const details: ServiceErrorDetails = {
    status: answer.status,
    requestId,
    endpoint: call.endpoint,
  };
  let json: unknown;
  try {
    json = JSON.parse(answer.body);
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
