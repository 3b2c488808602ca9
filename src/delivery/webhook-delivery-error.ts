import { ConcordanceError } from '../errors/concordance-error.ts';
/** Why one webhook attempt did not count as delivered. */
export type WebhookFailureCode =
  /** The endpoint answered 410 Gone: it will never take the event; no retry. */
  | 'ERR_WEBHOOK_GONE'
  /** Any other answer outside 2xx (redirects included: a signed POST is never re-sent elsewhere). */
  | 'ERR_WEBHOOK_STATUS'
  /** No complete answer within `delivery.webhook.timeout_ms`. */
  | 'ERR_WEBHOOK_TIMEOUT'
  /** The connection failed (refused, reset, DNS, TLS). */
  | 'ERR_WEBHOOK_NETWORK';

/**
 * A failed webhook attempt. The message names the status or the network error code, never the
 * URL's query string, the payload or the secret, because it is logged and kept with dead letters.
 */
export class WebhookDeliveryError extends ConcordanceError {
  readonly code: WebhookFailureCode;
  /** The HTTP status, when the endpoint answered. */
  readonly status: number | undefined;

  constructor(
    code: WebhookFailureCode,
    message: string,
    options: { status?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WebhookDeliveryError';
    this.code = code;
    this.status = options.status;
  }

  /** 410 is final; anything else may succeed later. */
  get retryable(): boolean {
    return this.code !== 'ERR_WEBHOOK_GONE';
  }
}
