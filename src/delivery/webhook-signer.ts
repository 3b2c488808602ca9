import { Webhook } from 'standardwebhooks';
import type { ResultEvent } from './result-event.ts';

/** A signed request, ready to send: the exact body the signature covers, and its headers. */
export interface SignedWebhook {
  body: string;
  headers: {
    'content-type': 'application/json';
    'webhook-id': string;
    'webhook-timestamp': string;
    'webhook-signature': string;
  };
}

/**
 * Signs result events per the Standard Webhooks spec. `webhook-id` is the event id, so that it is
 * the same on every retry and receivers can deduplicate on it; the timestamp and signature are
 * made fresh per attempt (receivers refuse timestamps older than a few minutes).
 */
export class WebhookSigner {
  readonly #webhook: Webhook;

  /** @param secret `whsec_` + base64, as the receiver was given it. */
  constructor(secret: string) {
    this.#webhook = new Webhook(secret);
  }

  sign(event: ResultEvent, at: Date): SignedWebhook {
    const body = JSON.stringify(event);
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': event.id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': this.#webhook.sign(event.id, at, body),
      },
    };
  }
}
