import got, { RequestError, TimeoutError, type Agents } from 'got';
import type { SignedWebhook } from './webhook-signer.ts';
import { WEBHOOK_USER_AGENT } from './webhook-headers.ts';
import { WebhookDeliveryError } from './webhook-delivery-error.ts';

export interface WebhookClientOptions {
  /** The hospital's endpoint (`delivery.webhook.url`). */
  url: string;
  /** Per attempt, from sending to the whole answer. @defaultValue 10_000 */
  timeoutMs?: number;
  /** got's agents: a proxy and a CA bundle (`outboundAgents`). @defaultValue got's defaults */
  agent?: Agents | undefined;
}

/** What one attempt came to: the endpoint's 2xx, or why not. */
export type WebhookAttemptResult =
  { ok: true; status: number } | { ok: false; error: WebhookDeliveryError };

/**
 * Sends one signed POST. It never retries by itself and never follows redirects: retries are
 * scheduled by the delivery queue, where they wait without holding a connection or a worker slot.
 */
export class WebhookClient {
  readonly #url: string;
  readonly #timeoutMs: number;
  readonly #agent: Agents | undefined;

  constructor({ url, timeoutMs = 10_000, agent }: WebhookClientOptions) {
    this.#url = url;
    this.#timeoutMs = timeoutMs;
    this.#agent = agent;
  }

  /**
   * POSTs `request`; `traceparent` (the attempt's span, only when its trace is sampled) goes as
   * the W3C header, so that the hospital's receiver continues the trace.
   */
  async post(
    request: SignedWebhook,
    signal?: AbortSignal,
    traceparent?: string,
  ): Promise<WebhookAttemptResult> {
    try {
      const response = await got.post(this.#url, {
        body: request.body,
        headers: {
          ...request.headers,
          'user-agent': WEBHOOK_USER_AGENT,
          ...(traceparent === undefined ? {} : { traceparent }),
        },
        timeout: { request: this.#timeoutMs },
        retry: { limit: 0 },
        throwHttpErrors: false,
        followRedirect: false,
        signal,
        ...(this.#agent === undefined ? {} : { agent: this.#agent }),
      });
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { ok: true, status };
      if (status === 410) {
        return {
          ok: false,
          error: new WebhookDeliveryError('ERR_WEBHOOK_GONE', 'the endpoint answered 410 Gone', {
            status,
          }),
        };
      }
      return {
        ok: false,
        error: new WebhookDeliveryError('ERR_WEBHOOK_STATUS', `the endpoint answered ${status}`, {
          status,
        }),
      };
    } catch (err) {
      // A got error carries the request (headers, body): only its name and code go any further.
      const cause = err instanceof Error ? { name: err.name, code: errorCode(err) } : undefined;
      if (err instanceof TimeoutError) {
        return {
          ok: false,
          error: new WebhookDeliveryError(
            'ERR_WEBHOOK_TIMEOUT',
            `no answer within ${this.#timeoutMs} ms`,
            { cause },
          ),
        };
      }
      if (err instanceof RequestError) {
        return {
          ok: false,
          error: new WebhookDeliveryError(
            'ERR_WEBHOOK_NETWORK',
            `the request failed: ${errorCode(err) ?? err.name}`,
            { cause },
          ),
        };
      }
      throw err;
    }
  }
}

function errorCode(err: Error): string | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
