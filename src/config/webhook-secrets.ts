import { z } from 'zod';

/** How many webhook secrets may sign at once: enough for a rotation with an overlap, and a spare. */
export const MAX_WEBHOOK_SECRETS = 4;

/** One Standard Webhooks secret: `whsec_` + base64 (its strength is `checkWebhookSecret`'s). */
const WebhookSecretSchema = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/=]{16,}$/, 'a Standard Webhooks secret: whsec_ + base64');

/** The key bytes a secret stands for, as canonical base64: `=` padding or none, the same key. */
const keyOf = (secret: string) =>
  Buffer.from(secret.slice('whsec_'.length), 'base64').toString('base64');

/**
 * `WEBHOOK_SECRET`: one `whsec_…` secret, or several separated by spaces or commas (a list is taken
 * as it is). Every delivery is signed with each of them, so that a receiver can move to a new
 * secret while the old one still verifies (docs/webhook-verification.md, "Rotating the secret").
 * Messages never repeat a secret.
 */
export const WebhookSecretsSchema = z.preprocess(
  (value) =>
    typeof value === 'string' ? value.split(/[\s,]+/).filter((item) => item !== '') : value,
  z
    .array(WebhookSecretSchema)
    .min(
      1,
      'WEBHOOK_SECRET holds no secret: whsec_ + base64, several separated by spaces or commas',
    )
    .max(
      MAX_WEBHOOK_SECRETS,
      `at most ${MAX_WEBHOOK_SECRETS} secrets at once in WEBHOOK_SECRET: drop the retired ones`,
    )
    .refine(
      (list) => new Set(list.map(keyOf)).size === list.length,
      'WEBHOOK_SECRET holds the same secret twice',
    ),
);
