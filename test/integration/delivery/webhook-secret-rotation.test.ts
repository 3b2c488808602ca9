import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookHeadersSchema } from '../../../src/delivery/webhook-headers.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../tools/webhook-receiver.ts';
import { DeliveryFixture, makeEvent, newSecret } from './delivery-fixture.ts';

let fixture: DeliveryFixture | undefined;
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
  for (const receiver of receivers.splice(0)) await receiver.close();
});

/**
 * WEBHOOK_SECRET with two secrets, through the delivery router and the webhook worker the
 * composition root builds, to real HTTP receivers: what a hospital sees during a rotation.
 */
describe('webhook secret rotation (two secrets at once)', () => {
  it('signs each delivery with both: a receiver holding either verifies it, one holding neither refuses it', async () => {
    const [current, next, unrelated] = [newSecret(), newSecret(), newSecret()];
    // The receiver still holds the current secret; WEBHOOK_SECRET holds it and the next one.
    const f = (fixture = await DeliveryFixture.start({
      secret: current,
      webhookSecret: `${current}, ${next}`,
    }));
    expect(f.config.delivery.webhook.secret).toEqual([current, next]);

    const event = makeEvent({ concordance: { concordant: true, note: 'Zoë — 2 secrets' } });
    await f.deliver(event);
    await f.untilReceived(event.id);
    const [attempt] = f.attemptsOf(event.id);
    if (attempt === undefined) throw new Error('no attempt');
    expect(attempt.verified).toBe(true);
    expect(attempt.signature.split(' ')).toHaveLength(2);
    expect(WebhookHeadersSchema.safeParse(attempt.headers).success).toBe(true);

    const headers = {
      'webhook-id': attempt.webhookId,
      'webhook-timestamp': attempt.timestamp,
      'webhook-signature': attempt.signature,
    };
    // The reference verifier with each secret alone accepts the request as it was sent...
    for (const secret of [current, next]) {
      expect(new Webhook(secret).verify(attempt.rawBody, headers)).toEqual({
        ...event,
        changed: true,
      });
    }
    // ...and with an unrelated secret refuses it.
    expect(() => new Webhook(unrelated).verify(attempt.rawBody, headers)).toThrow(
      WebhookVerificationError,
    );

    // The same request, byte for byte, to a receiver that already moved to the next secret and to
    // one with an unrelated secret (real HTTP servers, verifying with the reference library).
    const moved = await startWebhookReceiver({ secret: next });
    const stranger = await startWebhookReceiver({ secret: unrelated });
    receivers.push(moved, stranger);
    const resend = (to: WebhookReceiver) =>
      fetch(to.url, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: attempt.rawBody,
      });
    expect((await resend(moved)).status).toBe(204);
    expect((await resend(stranger)).status).toBe(401);
    expect(moved.events.map((e) => e.webhookId)).toEqual([event.id]);
    expect(stranger.attempts.map((a) => a.verified)).toEqual([false]);
  });

  it('delivers to a receiver that holds only the next secret', async () => {
    const [current, next] = [newSecret(), newSecret()];
    const f = (fixture = await DeliveryFixture.start({
      secret: next,
      webhookSecret: `${current} ${next}`,
    }));
    const events = [makeEvent(), makeEvent({ ccsr_category: 'CIR007' })];
    await f.deliver(...events);
    await f.untilReceived(...events.map((e) => e.id));
    expect(f.receiver.attempts.map((a) => a.verified)).toEqual([true, true]);
  });
});
