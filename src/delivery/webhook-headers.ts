import { z } from 'zod';
import { MAX_WEBHOOK_SECRETS } from '../config/webhook-secrets.ts';

/** One signature entry: `v1,` + the base64 of an HMAC-SHA256 (32 bytes). */
const V1 = 'v1,[A-Za-z0-9+/]{43}=';

/** The `user-agent` of every webhook request. */
export const WEBHOOK_USER_AGENT = 'concordance-worker-webhook/1';

/**
 * The headers of a webhook request as it is sent (see WebhookSigner and WebhookClient), with the
 * lower-case names a receiver's HTTP stack usually hands over (HTTP header names are
 * case-insensitive). Others come along (`host`, `content-length`, `accept-encoding`, and whatever
 * a proxy adds), so the object is open. Published as `docs/schemas/webhook-headers.schema.json`.
 */
export const WebhookHeadersSchema = z.looseObject({
  'content-type': z.literal('application/json'),
  'user-agent': z.literal(WEBHOOK_USER_AGENT),
  'webhook-id': z
    .uuid()
    .describe('The event id: the same on every retry of the event; deduplicate on it.'),
  'webhook-timestamp': z
    .string()
    .regex(/^[0-9]+$/)
    .describe('Unix time of this attempt in whole seconds, fresh on every attempt.'),
  'webhook-signature': z
    .string()
    .regex(new RegExp(`^${V1}( ${V1}){0,${MAX_WEBHOOK_SECRETS - 1}}$`))
    .describe(
      '`v1,` + base64(HMAC-SHA256(secret key, `{webhook-id}.{webhook-timestamp}.{raw body}`)), ' +
        `one per configured secret (1 to ${MAX_WEBHOOK_SECRETS}), separated by single spaces; ` +
        'any one that verifies is enough.',
    ),
});
export type WebhookHeaders = z.infer<typeof WebhookHeadersSchema>;
