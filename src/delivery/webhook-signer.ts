import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { ResultEvent } from '../interface/result-event.ts';

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
 *
 * The signature is `v1,` + base64(HMAC-SHA256(secret bytes, `id.timestamp.body`)), byte for byte
 * what the `standardwebhooks` library makes, but under a key object prepared once and with
 * Node's native HMAC (the library sets the key up per call and hashes in JavaScript).
 */
export class WebhookSigner {
  readonly #key: KeyObject;

  /** @param secret `whsec_` + base64, as the receiver was given it. */
  constructor(secret: string) {
    // Refuses what the Standard Webhooks library refuses (an empty or malformed secret).
    new Webhook(secret);
    this.#key = createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
  }

  sign(event: ResultEvent, at: Date): SignedWebhook {
    const body = JSON.stringify(event);
    const timestamp = String(Math.floor(at.getTime() / 1000));
    const signature = createHmac('sha256', this.#key)
      .update(`${event.id}.${timestamp}.${body}`, 'utf8')
      .digest('base64');
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': event.id,
        'webhook-timestamp': timestamp,
        'webhook-signature': `v1,${signature}`,
      },
    };
  }
}
