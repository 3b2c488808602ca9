import { ConcordanceError } from '../../errors/concordance-error.ts';
/** What every service error may know about the call that failed. */
export interface ServiceErrorDetails {
  /** HTTP status of the response, when there was one. */
  status?: number;
  /** The `x-request-id` sent with the call (the same for all its retries). */
  requestId?: string;
  /** The route template, e.g. `GET /v1/concordance/{job_id}`; never carries an id. */
  endpoint?: string;
  /**
   * The underlying failure. Only sanitised errors are passed here: a got error carries its
   * request options (headers with the API key, the body) and must never be attached as is.
   */
  cause?: unknown;
}

/**
 * Base class of every error the service client throws. `code` is stable and meant for
 * programmatic checks; `message` is for humans. Neither the message nor {@link toJSON} carries the
 * API key or a request body, because bodies hold patient data and errors end up in logs.
 */
export abstract class ServiceError extends ConcordanceError {
  abstract override readonly code: string;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly endpoint: string | undefined;

  constructor(message: string, details: ServiceErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.requestId = details.requestId;
    this.endpoint = details.endpoint;
  }

  /** Whether the same call may succeed later (rate limit, outage, timeout). */
  readonly transient: boolean = false;

  toJSON(): Record<string, unknown> {
    const json: Record<string, unknown> = {
      name: this.name,
      code: this.code,
      message: this.message,
    };
    if (this.status !== undefined) json.status = this.status;
    if (this.requestId !== undefined) json.requestId = this.requestId;
    if (this.endpoint !== undefined) json.endpoint = this.endpoint;
    return json;
  }
}
