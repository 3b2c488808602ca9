import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventTracker } from '../../../src/ingest/fhir/event-tracker.ts';
import { FHIR_JSON, startFhirHarness, type FhirHarness } from './support/fhir-harness.ts';
import { condition, r4Notification } from './support/notifications.ts';

/**
 * The Subscriptions IG's reference server names the subscription of an R4 backport notification
 * with `valueString` (issue 20); `valueUri` and `valueCanonical` are read the same way. A handshake
 * in any of these forms is answered 200 (so the server activates the subscription) and starts its
 * event count, exactly as the `valueReference` handshake of notifications.test.ts does.
 */

let h: FhirHarness;
const SUB = 'https://ehr.example.org/fhir/Subscription/sub-1';

beforeEach(async () => {
  h = await startFhirHarness();
});
afterEach(async () => {
  await h.close();
});

/** `r4Notification` with its `subscription` parameter written as `value` instead. */
function withSubscription(
  body: Record<string, unknown>,
  value: Record<string, unknown>,
): Record<string, unknown> {
  const copy = structuredClone(body) as {
    entry: { resource?: { parameter?: { name: string }[] } }[];
  };
  const parameters = copy.entry[0]?.resource?.parameter ?? [];
  const at = parameters.findIndex((p) => p.name === 'subscription');
  parameters[at] = { name: 'subscription', ...value };
  return copy as unknown as Record<string, unknown>;
}

function post(body: unknown) {
  return h.app.inject({
    method: 'POST',
    url: '/v1/fhir/notifications',
    headers: FHIR_JSON,
    payload: JSON.stringify(body),
  });
}

const tracker = () => new EventTracker({ redis: h.inspect, prefix: h.prefix });

describe('the subscription parameter as valueString, valueUri or valueCanonical', () => {
  for (const form of ['valueString', 'valueUri', 'valueCanonical'] as const) {
    it(`a ${form} handshake is answered 200, changes no record and starts the event count`, async () => {
      const before = await h.snapshot();
      const res = await post(
        withSubscription(r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 }), {
          [form]: SUB,
        }),
      );
      expect(res.statusCode).toBe(200);
      const after = await h.snapshot();
      // Only the subscription's own tracking key is new: no crosswalk entry, no record, no job.
      const added = [...after.keys()].filter((k) => !before.has(k));
      expect(added).toHaveLength(1);
      expect(added[0]).toContain(':fhirsub:');
      expect(await tracker().lastEvent(SUB)).toBe(0);
      expect(h.fhir.seen).toEqual([]);
    });
  }

  it('after a valueString handshake, its events are applied in sequence (no gap)', async () => {
    const handshake = withSubscription(
      r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 }),
      { valueString: SUB },
    );
    expect((await post(handshake)).statusCode).toBe(200);
    const event = withSubscription(
      r4Notification({
        subscription: SUB,
        type: 'event-notification',
        eventsSince: 1,
        events: [{ n: 1, focus: 'Condition/vs1' }],
        resources: [condition('vs1', 'pat-vs')],
      }),
      { valueString: SUB },
    );
    expect((await post(event)).statusCode).toBe(200);
    expect(await tracker().lastEvent(SUB)).toBe(1);
    expect(h.fhir.calls('$status')).toEqual([]);
    const psid = await h.crosswalk.find('pat-vs');
    expect(psid).toBeDefined();
    const items = (await h.records.get(psid ?? ''))?.clinical?.items;
    expect(items?.['fhir:Condition/vs1']).toBeDefined();
  });

  it('an identifier-only subscription reference is still refused (422), changing nothing', async () => {
    const before = await h.snapshot();
    const res = await post(
      withSubscription(r4Notification({ subscription: SUB, type: 'handshake', eventsSince: 0 }), {
        valueReference: { identifier: { value: 'sub-1' } },
      }),
    );
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('valueString');
    expect(await h.snapshot()).toEqual(before);
  });
});
