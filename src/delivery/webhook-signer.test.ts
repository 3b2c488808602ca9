import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { MAX_WEBHOOK_SECRETS } from '../config/webhook-secrets.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import { DeliveryConfigError } from './delivery-config-error.ts';
import { WEBHOOK_USER_AGENT, WebhookHeadersSchema } from './webhook-headers.ts';
import { WebhookSigner } from './webhook-signer.ts';

const event = (id: string, note: string): ResultEvent => ({
  id,
  type: 'concordance.completed',
  created_at: '2026-11-02T08:00:00.000Z',
  patient_id: 'MRN-0042',
  patient_service_id: 'psid-1',
  ccsr_category: 'END002',
  record_version: 1,
  triggered_by: { event_ids: ['e1'], count: 1, first_update_at: null, last_update_at: null },
  remote_job_id: 'job-1',
  status: 'completed',
  concordance: { concordant: true, note },
  error: null,
  changed: true,
});

/** Signed by the code before, which signed with the `standardwebhooks` library (commit 8dc7cee). */
const BEFORE = {
  secret: 'whsec_AyA9WneUsc7rCCVCX3yZttPwDSpHZIGeu9j1Ei9MaYY=',
  at: new Date(1_700_000_000_000),
  event: event('9d3c1f5e-2b4a-4c6d-8e7f-0a1b2c3d4e5f', 'Zoë'),
  signature: 'v1,JH6szjm78LZD9gXlPyfb9mM3X2VxtqC+UIICD0nQKcw=',
};

describe('WebhookSigner', () => {
  it('signs as the earlier code did', () => {
    const signed = new WebhookSigner(BEFORE.secret).sign(BEFORE.event, BEFORE.at);
    expect(signed.headers['webhook-signature']).toBe(BEFORE.signature);
    expect(signed.headers['webhook-timestamp']).toBe('1700000000');
    expect(signed.headers['webhook-id']).toBe(BEFORE.event.id);
    expect(JSON.parse(signed.body)).toEqual(BEFORE.event);
  });

  it('makes the signature of the Standard Webhooks library, which verifies it', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        fc.boolean(),
        fc.uuid(),
        fc.string({ unit: 'grapheme' }),
        fc.integer({ min: 0, max: 4_000_000_000 }),
        (bytes, padded, id, note, seconds) => {
          const text = Buffer.from(bytes).toString('base64');
          const secret = `whsec_${padded ? text : text.replace(/=+$/, '')}`;
          const at = new Date(seconds * 1_000 + (seconds % 1_000));
          const signed = new WebhookSigner(secret).sign(event(id, note), at);
          const library = new Webhook(secret);
          expect(signed.headers['webhook-signature']).toBe(library.sign(id, at, signed.body));
        },
      ),
    );
    const now = new Date();
    const signed = new WebhookSigner(BEFORE.secret).sign(BEFORE.event, now);
    expect(new Webhook(BEFORE.secret).verify(signed.body, signed.headers)).toEqual(BEFORE.event);
  });

  it("makes the headers the published schema describes (with the client's user-agent)", () => {
    fc.assert(
      fc.property(
        fc.uuid(),
        fc.string({ unit: 'grapheme' }),
        fc.integer({ min: 0, max: 4_000_000_000 }),
        (id, note, seconds) => {
          const signed = new WebhookSigner(BEFORE.secret).sign(
            event(id, note),
            new Date(seconds * 1_000),
          );
          const sent = { ...signed.headers, 'user-agent': WEBHOOK_USER_AGENT };
          expect(WebhookHeadersSchema.parse(sent)).toEqual(sent);
        },
      ),
    );
    const signed = new WebhookSigner(BEFORE.secret).sign(BEFORE.event, BEFORE.at);
    const sent = { ...signed.headers, 'user-agent': WEBHOOK_USER_AGENT };
    // Not a schema that takes anything: more signatures than secrets may sign, a list separated
    // otherwise than by single spaces, a v2, a millisecond timestamp.
    for (const wrong of [
      {
        'webhook-signature': Array(MAX_WEBHOOK_SECRETS + 1)
          .fill(BEFORE.signature)
          .join(' '),
      },
      { 'webhook-signature': `${BEFORE.signature},${BEFORE.signature}` },
      { 'webhook-signature': `${BEFORE.signature}  ${BEFORE.signature}` },
      { 'webhook-signature': `${BEFORE.signature} ` },
      { 'webhook-signature': ` ${BEFORE.signature}` },
      { 'webhook-signature': BEFORE.signature.replace('v1,', 'v2,') },
      { 'webhook-timestamp': '1700000000.5' },
      { 'webhook-id': 'not-a-uuid' },
      { 'content-type': 'text/plain' },
    ]) {
      expect(WebhookHeadersSchema.safeParse({ ...sent, ...wrong }).success).toBe(false);
    }
  });

  it('refuses a secret the library refuses', () => {
    expect(() => new WebhookSigner('whsec_')).toThrow();
    expect(() => new WebhookSigner('whsec_not*base64')).toThrow();
    expect(() => new WebhookSigner([BEFORE.secret, 'whsec_not*base64'])).toThrow();
    expect(() => new WebhookSigner([])).toThrow(DeliveryConfigError);
  });
});

describe('WebhookSigner with several secrets (a rotation with an overlap)', () => {
  const secrets = () =>
    Array.from(
      { length: MAX_WEBHOOK_SECRETS },
      () => `whsec_${randomBytes(32).toString('base64')}`,
    );

  it('signs with each secret, in their order: each entry is what that secret alone signs', () => {
    const list = secrets();
    for (let count = 1; count <= list.length; count++) {
      const some = list.slice(0, count);
      const signed = new WebhookSigner(some).sign(BEFORE.event, BEFORE.at);
      const entries = signed.headers['webhook-signature'].split(' ');
      expect(entries).toEqual(
        some.map(
          (secret) =>
            new WebhookSigner(secret).sign(BEFORE.event, BEFORE.at).headers['webhook-signature'],
        ),
      );
      expect(new Set(entries).size).toBe(count);
      const sent = { ...signed.headers, 'user-agent': WEBHOOK_USER_AGENT };
      expect(WebhookHeadersSchema.parse(sent)).toEqual(sent);
    }
    // A list of one signs exactly as the one secret does (the earlier code's signature).
    const one = new WebhookSigner([BEFORE.secret]).sign(BEFORE.event, BEFORE.at);
    expect(one.headers['webhook-signature']).toBe(BEFORE.signature);
  });

  it('is accepted by the reference verifier holding any one of the secrets, and by no other', () => {
    const [oldSecret, newSecret, unrelated] = secrets() as [string, string, string];
    const signed = new WebhookSigner([oldSecret, newSecret]).sign(BEFORE.event, new Date());
    for (const secret of [oldSecret, newSecret]) {
      expect(new Webhook(secret).verify(signed.body, signed.headers)).toEqual(BEFORE.event);
    }
    expect(() => new Webhook(unrelated).verify(signed.body, signed.headers)).toThrow(
      WebhookVerificationError,
    );
  });
});
