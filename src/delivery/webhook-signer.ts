import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { ResultEvent } from '../interface/result-event.ts';
import { DeliveryConfigError } from './delivery-config-error.ts';

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
 * Each signature is `v1,` + base64(HMAC-SHA256(secret bytes, `id.timestamp.body`)), byte for byte
 * what the `standardwebhooks` library makes, but under key objects prepared once and with Node's
 * native HMAC (the library sets the key up per call and hashes in JavaScript). With several
 * secrets (a rotation's overlap) `webhook-signature` holds one such entry per secret, in their
 * order, separated by spaces: a receiver holding any one of them verifies the request.
 */
export class WebhookSigner {
  readonly #keys: readonly KeyObject[];

  /** @param secrets `whsec_` + base64, as the receiver was given it; one or more. */
  constructor(secrets: string | readonly string[]) {
    const list = typeof secrets === 'string' ? [secrets] : secrets;
    if (list.length === 0) throw new DeliveryConfigError('WEBHOOK_SECRET holds no secret');
    this.#keys = list.map((secret) => {
      // Refuses what the Standard Webhooks library refuses (an empty or malformed secret).
      new Webhook(secret);
      return createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
    });
  }

  sign(event: ResultEvent, at: Date): SignedWebhook {
    const body = JSON.stringify(event);
    const timestamp = String(Math.floor(at.getTime() / 1000));
    const content = `${event.id}.${timestamp}.${body}`;
    const signatures = this.#keys.map(
      (key) => `v1,${createHmac('sha256', key).update(content, 'utf8').digest('base64')}`,
    );
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': event.id,
        'webhook-timestamp': timestamp,
        'webhook-signature': signatures.join(' '),
      },
    };
  }
}
