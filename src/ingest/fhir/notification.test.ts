import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import { parseNotification } from './notification.ts';
import { PUBLIC_FIXTURES } from '../../../test/support/public-fixtures.ts';

const load = (name: string): unknown =>
  JSON.parse(readFileSync(`${PUBLIC_FIXTURES}fhir/${name}`, 'utf8'));

describe('parseNotification', () => {
  it('reads the R4 backport full-resource example', () => {
    const n = parseNotification(load('full_resource_notification_bundle_example.json'));
    expect(n).toMatchObject({
      format: 'Parameters',
      subscription: 'https://fhirserver.org/fhir/Subscription/123',
      status: 'active',
      type: 'event-notification',
      eventsSinceSubscriptionStart: 1,
      events: [
        {
          eventNumber: 1,
          focus: 'https://fhirserver.org/fhir/Encounter/86009987-eabe-42bf-8c02-b112b18cb616',
          additionalContext: [],
        },
      ],
    });
    expect(n.entries).toHaveLength(1);
    expect(n.entries[0]?.resource?.resourceType).toBe('Encounter');
  });

  it('reads the id-only example (entries without resources)', () => {
    const n = parseNotification(load('id_only_notification_bundle_example.json'));
    expect(n.entries).toEqual([
      {
        fullUrl: 'https://fhirserver.org/fhir/Encounter/86009987-eabe-42bf-8c02-b112b18cb616',
        resource: undefined,
      },
    ]);
  });

  it('reads an R5 SubscriptionStatus with numeric or string event numbers', () => {
    const n = parseNotification({
      resourceType: 'Bundle',
      type: 'history',
      entry: [
        {
          resource: {
            resourceType: 'SubscriptionStatus',
            status: 'active',
            type: 'event-notification',
            eventsSinceSubscriptionStart: 12,
            notificationEvent: [
              { eventNumber: '11', focus: { reference: 'Condition/a' } },
              {
                eventNumber: 12,
                focus: { reference: 'Condition/b' },
                additionalContext: [{ reference: 'Patient/p' }],
              },
            ],
            subscription: { reference: 'Subscription/s' },
            topic: 'http://example.org/t',
          },
        },
      ],
    });
    expect(n.format).toBe('SubscriptionStatus');
    expect(n.events.map((e) => e.eventNumber)).toEqual([11, 12]);
    expect(n.events[1]?.additionalContext).toEqual(['Patient/p']);
  });

  it('reads an R5 notification: a Bundle of type subscription-notification', () => {
    const status = {
      resourceType: 'SubscriptionStatus',
      type: 'event-notification',
      eventsSinceSubscriptionStart: '3',
      notificationEvent: [{ eventNumber: '3', focus: { reference: 'Condition/c' } }],
      subscription: { reference: 'Subscription/s' },
    };
    const focus = { fullUrl: 'https://ehr.example.org/fhir/Condition/c' };
    const bundle = { resourceType: 'Bundle', type: 'subscription-notification' };
    expect(parseNotification({ ...bundle, entry: [{ resource: status }, focus] })).toMatchObject({
      bundleType: 'subscription-notification',
      format: 'SubscriptionStatus',
      eventsSinceSubscriptionStart: 3,
      events: [{ eventNumber: 3, focus: 'Condition/c' }],
    });
    expect(parseNotification(load('id_only_notification_bundle_example.json')).bundleType).toBe(
      'history',
    );
  });

  /** An R4 backport handshake whose `subscription` parameter is `value`. */
  const handshake = (value: Record<string, unknown>) => ({
    resourceType: 'Bundle',
    type: 'history',
    entry: [
      {
        resource: {
          resourceType: 'Parameters',
          parameter: [
            { name: 'subscription', ...value },
            { name: 'topic', valueCanonical: 'http://example.org/topics/t' },
            { name: 'type', valueCode: 'handshake' },
          ],
        },
      },
    ],
  });
  const SUB = 'https://ehr.example.org/fhir/Subscription/s-1';

  it.each([
    ['valueReference', { valueReference: { reference: SUB } }],
    ['valueString (the IG reference server)', { valueString: SUB }],
    ['valueUri', { valueUri: SUB }],
    ['valueCanonical', { valueCanonical: SUB }],
  ])('reads the subscription given as %s', (_name, value) => {
    expect(parseNotification(handshake(value))).toMatchObject({
      format: 'Parameters',
      type: 'handshake',
      subscription: SUB,
    });
  });

  it.each([
    ['an identifier-only valueReference', { valueReference: { identifier: { value: 's-1' } } }],
    ['an empty valueString', { valueString: '' }],
    ['a valueCode', { valueCode: 's-1' }],
  ])('refuses a subscription given as %s, naming the forms it takes', (_name, value) => {
    let error: unknown;
    try {
      parseNotification(handshake(value));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RequestValidationError);
    expect(JSON.stringify(error)).not.toContain('s-1');
    expect((error as Error).message + JSON.stringify(error)).toMatch(/valueString/);
  });

  it('refuses a non-string valueUri at its place', () => {
    expect(() => parseNotification(handshake({ valueUri: 7 }))).toThrow(RequestValidationError);
  });

  it.each([
    ['a non-history Bundle', { resourceType: 'Bundle', type: 'batch', entry: [{}] }],
    ['an empty Bundle', { resourceType: 'Bundle', type: 'history', entry: [] }],
    [
      'a negative event number',
      {
        resourceType: 'Bundle',
        type: 'history',
        entry: [
          {
            resource: {
              resourceType: 'SubscriptionStatus',
              type: 'event-notification',
              subscription: { reference: 'Subscription/s' },
              notificationEvent: [{ eventNumber: '-1' }],
            },
          },
        ],
      },
    ],
    [
      'a Parameters status without a subscription',
      {
        resourceType: 'Bundle',
        type: 'history',
        entry: [
          {
            resource: {
              resourceType: 'Parameters',
              parameter: [{ name: 'type', valueCode: 'heartbeat' }],
            },
          },
        ],
      },
    ],
  ])('refuses %s', (_name, body) => {
    expect(() => parseNotification(body)).toThrow(RequestValidationError);
  });
});
