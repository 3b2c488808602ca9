import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { WebhookSigner } from '../../../src/delivery/webhook-signer.ts';
import { DeliveryFixture, makeEvent, newSecret } from './delivery-fixture.ts';

let fixture: DeliveryFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const received = (f: DeliveryFixture, id: string) =>
  f.receiver.events.find((e) => e.webhookId === id)?.payload;

describe('webhook delivery', () => {
  it('signs every event per Standard Webhooks, and the receiver really verifies', async () => {
    const f = (fixture = await DeliveryFixture.start());
    const events = [
      makeEvent(),
      makeEvent({ ccsr_category: 'CIR007' }),
      makeEvent({ patient_service_id: 'psid-0002' }),
    ];
    await f.deliver(...events);
    await f.untilReceived(...events.map((e) => e.id));

    expect(f.receiver.attempts).toHaveLength(3);
    expect(f.receiver.attempts.every((a) => a.verified)).toBe(true);
    for (const event of events) {
      // The whole event arrives, patient_id included (it goes to the hospital), plus `changed`.
      expect(received(f, event.id)).toEqual({ ...event, changed: true });
    }

    // The same request with one byte of the body changed is refused by the receiver...
    const [first] = f.receiver.attempts;
    if (first === undefined) throw new Error('no attempt');
    const headers = {
      'content-type': 'application/json',
      'webhook-id': first.webhookId,
      'webhook-timestamp': first.timestamp,
      'webhook-signature': first.signature,
    };
    const tampered = first.rawBody.replace('"concordant":true', '"concordant":false');
    expect(tampered).not.toBe(first.rawBody);
    const refused = await fetch(f.receiver.url, { method: 'POST', headers, body: tampered });
    expect(refused.status).toBe(401);
    // ...as is a body signed with another secret, while the untouched request still passes.
    const forged = new WebhookSigner(newSecret()).sign(events[0] as ResultEvent, new Date());
    const forgedAnswer = await fetch(f.receiver.url, {
      method: 'POST',
      headers: forged.headers,
      body: forged.body,
    });
    expect(forgedAnswer.status).toBe(401);
    const replayed = await fetch(f.receiver.url, { method: 'POST', headers, body: first.rawBody });
    expect(replayed.status).toBe(204);
    expect(f.receiver.attempts.slice(3).map((a) => a.verified)).toEqual([false, false, true]);
    // The reference verifier accepts what the worker sent.
    expect(() => new Webhook(f.secret).verify(first.rawBody, headers)).not.toThrow();
  });

  it('retries through a failing endpoint: each event acknowledged once, in order per key', async () => {
    let failures = 0;
    const f = (fixture = await DeliveryFixture.start({
      // The endpoint is down for its first 8 requests, then answers 200.
      respond: () => (failures++ < 8 ? 503 : 200),
      workers: 2,
    }));
    const [a1, a2, a3, a4] = [makeEvent(), makeEvent(), makeEvent(), makeEvent()] as const;
    const [b1, b2] = [
      makeEvent({ ccsr_category: 'CIR007' }),
      makeEvent({ ccsr_category: 'CIR007' }),
    ] as const;
    const keyA = [a1, a2, a3, a4];
    const keyB = [b1, b2];
    // Back to back while the endpoint fails; the two keys interleaved.
    await f.deliver(a1, b1, a2, a3, b2, a4);
    const all = [...keyA, ...keyB];
    await f.untilReceived(...all.map((e) => e.id));

    // Exactly one acknowledged delivery per webhook-id, and more attempts than events.
    const acknowledged = f.receiver.attempts.filter((a) => a.status >= 200 && a.status < 300);
    expect(acknowledged.map((a) => a.webhookId).sort()).toEqual(all.map((e) => e.id).sort());
    expect(f.receiver.attempts.length).toBeGreaterThan(all.length);
    expect(f.receiver.attempts.every((a) => a.verified)).toBe(true);
    // Retries of an event carry its id: no other webhook-id ever appeared.
    expect(new Set(f.receiver.attempts.map((a) => a.webhookId))).toEqual(
      new Set(all.map((e) => e.id)),
    );
    expect(f.attemptsOf(a1.id).length).toBeGreaterThan(1);

    // Per key, in creation order, and an event is not even tried before its predecessor's 2xx.
    for (const key of [keyA, keyB]) {
      const ids = key.map((e) => e.id);
      expect(f.receiver.events.map((e) => e.webhookId).filter((id) => ids.includes(id))).toEqual(
        ids,
      );
      for (let i = 1; i < ids.length; i++) {
        const firstTry = f.receiver.attempts.findIndex((a) => a.webhookId === ids[i]);
        const previousAck = f.receiver.attempts.findIndex(
          (a) => a.webhookId === ids[i - 1] && a.status < 300,
        );
        expect(previousAck).toBeGreaterThanOrEqual(0);
        expect(firstTry).toBeGreaterThan(previousAck);
      }
    }

    // Handing the delivered events over again (a query job retried after a crash) sends nothing:
    // a new event of the key, sent after them, arrives with nothing before it.
    await f.untilOutcome(a4.id, 'delivered');
    const before = f.receiver.attempts.length;
    await f.deliver(...keyA);
    const sentinel = makeEvent();
    await f.deliver(sentinel);
    await f.untilReceived(sentinel.id);
    await f.untilOutcome(sentinel.id, 'delivered');
    expect(f.receiver.attempts.slice(before).map((a) => a.webhookId)).toEqual([sentinel.id]);

    expect(
      await f.counter('cw_deliveries_total', { channel: 'webhook', outcome: 'delivered' }),
    ).toBe(7);
    expect(await f.counter('cw_deliveries_total', { channel: 'webhook', outcome: 'retried' })).toBe(
      8,
    );
  });

  it('dead-letters at once on 410, and the key goes on', async () => {
    const gone = makeEvent();
    const next = makeEvent();
    const f = (fixture = await DeliveryFixture.start({
      respond: (a) => (a.webhookId === gone.id ? 410 : 204),
    }));
    await f.deliver(gone, next);
    await f.untilReceived(next.id);

    expect(f.attemptsOf(gone.id)).toHaveLength(1);
    const letter = (await f.deadLetters.list())[0];
    expect(letter).toMatchObject({
      event: { ...gone, changed: true },
      channel: 'webhook',
      last_error: { code: 'ERR_WEBHOOK_GONE', status: 410 },
      attempts: 1,
    });
    expect(letter?.first_attempt_at).toBe(letter?.last_attempt_at);
    expect(await f.deadLetters.count()).toBe(1);
    expect(await f.counter('cw_dead_letters_total', { channel: 'webhook' })).toBe(1);
  });

  it('dead-letters with its last error once max_age has passed', async () => {
    const stuck = makeEvent();
    const next = makeEvent();
    const f = (fixture = await DeliveryFixture.start({
      respond: (a) => (a.webhookId === stuck.id ? 503 : 204),
      delivery: { max_age_ms: 300 },
    }));
    await f.deliver(stuck, next);
    await f.untilReceived(next.id);

    const tries = f.attemptsOf(stuck.id);
    expect(tries.length).toBeGreaterThan(1);
    const letter = await f.deadLetters.get(stuck.id);
    expect(letter).toMatchObject({
      last_error: { code: 'ERR_WEBHOOK_STATUS', status: 503 },
      attempts: tries.length,
    });
    // The times of the first and the last attempt, as the receiver saw them (to the second).
    const seconds = (iso: string | null | undefined) => Math.floor(Date.parse(iso ?? '') / 1000);
    expect(seconds(letter?.first_attempt_at)).toBe(Number(tries[0]?.timestamp));
    expect(seconds(letter?.last_attempt_at)).toBe(Number(tries.at(-1)?.timestamp));
    const gaveUp = await f.logs.waitFor(
      (e) => e.event_id === stuck.id && e.outcome === 'dead_lettered',
    );
    expect(gaveUp).toMatchObject({
      reason: 'max_age_exceeded',
      status: 503,
      attempt: tries.length,
    });
  });

  it('heals a line whose first event lost its job (a crash between the store and the queue)', async () => {
    const f = (fixture = await DeliveryFixture.start({ workers: 0 }));
    const orphan = makeEvent();
    const behind = makeEvent();
    // What a crash leaves: the event stored in its line, no job added.
    await f.webhook.store.enqueue(orphan, Date.now());
    await f.deliver(behind);
    await f.startWorker();
    await f.untilReceived(orphan.id, behind.id);
    expect(f.receiver.events.map((e) => e.webhookId)).toEqual([orphan.id, behind.id]);
  });
});
