import { z } from 'zod';
import { toValidationItems } from '../../interface/validation-error.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import { ResourceSchema, type FhirResource } from './fhir-resource.ts';

export const NOTIFICATION_TYPES = [
  'handshake',
  'heartbeat',
  'event-notification',
  'query-status',
  'query-event',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** A focus named only by a business identifier (`focus.identifier`), with its type if given. */
export interface IdentifierFocus {
  type: string | undefined;
  system: string | undefined;
  value: string;
}

export interface NotificationEvent {
  eventNumber: number | undefined;
  /** The focus reference as written (absolute or relative). */
  focus: string | undefined;
  /** A focus without a reference, named by identifier (resolved by a search on the FHIR server). */
  focusIdentifier?: IdentifierFocus;
  additionalContext: string[];
}

/**
 * The Bundle types a notification comes in: `history` (R4 backport IG, R4B) and
 * `subscription-notification` (FHIR R5, where the type was introduced for notifications).
 */
export const NOTIFICATION_BUNDLE_TYPES = ['history', 'subscription-notification'] as const;
export type NotificationBundleType = (typeof NOTIFICATION_BUNDLE_TYPES)[number];

/** A notification Bundle's status (R4 backport `Parameters` or R4B/R5 `SubscriptionStatus`). */
export interface SubscriptionNotification {
  bundleType: NotificationBundleType;
  /** `Parameters` (R4 backport) or `SubscriptionStatus` (R4B/R5). */
  format: 'Parameters' | 'SubscriptionStatus';
  /** The subscription reference as written. */
  subscription: string;
  status: string | undefined;
  type: NotificationType;
  eventsSinceSubscriptionStart: number | undefined;
  events: NotificationEvent[];
  /** Entries after the status: resources by fullUrl (id-only entries carry none). */
  entries: { fullUrl: string | undefined; resource: FhirResource | undefined }[];
}

/** An event number: FHIR gives integer64 as a JSON string, older servers as a number. */
const eventNumber = z.union([
  z.int().min(0),
  z
    .string()
    .regex(/^\d{1,15}$/, 'a non-negative integer')
    .transform(Number),
]);

const ReferenceValue = z.looseObject({ reference: z.string().min(1) });

/** A focus: a literal reference, or an identifier-only reference (`{type?, identifier}`). */
const FocusValue = z.union([
  ReferenceValue,
  z.looseObject({
    type: z.string().min(1).optional(),
    identifier: z.looseObject({ system: z.string().optional(), value: z.string().min(1) }),
  }),
]);
type Focus = z.infer<typeof FocusValue>;

function focusOf(focus: Focus | undefined): Pick<NotificationEvent, 'focus' | 'focusIdentifier'> {
  if (focus === undefined) return { focus: undefined };
  if ('reference' in focus && typeof focus.reference === 'string') {
    return { focus: focus.reference };
  }
  const f = focus as { type?: string; identifier: { system?: string; value: string } };
  return {
    focus: undefined,
    focusIdentifier: { type: f.type, system: f.identifier.system, value: f.identifier.value },
  };
}

const EntrySchema = z.looseObject({
  fullUrl: z.string().optional(),
  resource: ResourceSchema.optional(),
});

/** A notification Bundle's outline (also the OpenAPI description of its route's body). */
export const NotificationBundleSchema = z.looseObject({
  resourceType: z.literal('Bundle'),
  type: z.enum(NOTIFICATION_BUNDLE_TYPES),
  entry: z
    .array(EntrySchema)
    .min(1, 'a notification Bundle starts with its status entry')
    .check((ctx) => {
      const first = ctx.value[0]?.resource?.resourceType;
      if (first !== 'Parameters' && first !== 'SubscriptionStatus') {
        ctx.issues.push({
          code: 'custom',
          input: first,
          path: [0, 'resource', 'resourceType'],
          message: 'entry 0 must be a Parameters (R4 backport) or SubscriptionStatus resource',
        });
      }
    }),
});

// R4 backport: a Parameters resource whose parameters carry the status.
const ParameterSchema = z.looseObject({
  name: z.string(),
  valueReference: FocusValue.optional(),
  valueCanonical: z.string().optional(),
  valueCode: z.string().optional(),
  valueString: z.string().optional(),
  valueUri: z.string().optional(),
  valueUnsignedInt: z.int().optional(),
  valueInteger: z.int().optional(),
  valueInteger64: z.union([z.string(), z.int()]).optional(),
  valueDecimal: z.number().optional(),
  part: z.array(z.unknown()).optional(),
});
type Parameter = z.infer<typeof ParameterSchema>;

/**
 * The `subscription` parameter's value: a `valueReference` (the IG's profile), or the Subscription's
 * URL as `valueString` (what the Subscriptions IG's reference server sends), `valueUri` or
 * `valueCanonical`. The first of them present, in that order, is the subscription as written.
 */
const SubscriptionParameterSchema = z.union([
  z.looseObject({ valueReference: ReferenceValue }).transform((p) => p.valueReference.reference),
  z.looseObject({ valueString: z.string().min(1) }).transform((p) => p.valueString),
  z.looseObject({ valueUri: z.string().min(1) }).transform((p) => p.valueUri),
  z.looseObject({ valueCanonical: z.string().min(1) }).transform((p) => p.valueCanonical),
]);

const ParametersStatusSchema = z.looseObject({
  resourceType: z.literal('Parameters'),
  parameter: z.array(ParameterSchema),
});

const SubscriptionStatusSchema = z.looseObject({
  resourceType: z.literal('SubscriptionStatus'),
  subscription: ReferenceValue,
  status: z.string().optional(),
  type: z.enum(NOTIFICATION_TYPES),
  eventsSinceSubscriptionStart: eventNumber.optional(),
  notificationEvent: z
    .array(
      z.looseObject({
        eventNumber: eventNumber.optional(),
        focus: FocusValue.optional(),
        additionalContext: z.array(ReferenceValue).optional(),
      }),
    )
    .optional(),
});

function invalid(
  issues: readonly z.core.$ZodIssue[],
  loc: readonly (string | number)[],
): RequestValidationError {
  return new RequestValidationError(toValidationItems(issues, loc));
}

function numberValue(p: Parameter | undefined): unknown {
  if (p === undefined) return undefined;
  return (
    p.valueString ?? p.valueUnsignedInt ?? p.valueInteger ?? p.valueInteger64 ?? p.valueDecimal
  );
}

function fromParameters(resource: unknown, loc: readonly (string | number)[]) {
  const parsed = ParametersStatusSchema.safeParse(resource);
  if (!parsed.success) throw invalid(parsed.error.issues, loc);
  const params = parsed.data.parameter;
  const one = (name: string) => params.find((p) => p.name === name);
  const missing = (name: string, msg: string) =>
    new RequestValidationError([
      { loc: [...loc, 'parameter'], msg: `${name}: ${msg}`, type: 'missing' },
    ]);

  const subscriptionValue = SubscriptionParameterSchema.safeParse(one('subscription'));
  if (!subscriptionValue.success) {
    throw missing(
      'subscription',
      'a valueReference (with a reference), valueString, valueUri or valueCanonical is required',
    );
  }
  const subscription = subscriptionValue.data;
  const type = z.enum(NOTIFICATION_TYPES).safeParse(one('type')?.valueCode);
  if (!type.success) throw missing('type', 'a notification type code is required');
  const since = eventNumber
    .optional()
    .safeParse(numberValue(one('events-since-subscription-start')));
  if (!since.success)
    throw invalid(since.error.issues, [...loc, 'events-since-subscription-start']);

  const events: NotificationEvent[] = [];
  params.forEach((p, index) => {
    if (p.name !== 'notification-event') return;
    const parts = z.array(ParameterSchema).safeParse(p.part ?? []);
    if (!parts.success) throw invalid(parts.error.issues, [...loc, 'parameter', index, 'part']);
    const part = (name: string) => parts.data.filter((x) => x.name === name);
    const n = eventNumber.optional().safeParse(numberValue(part('event-number')[0]));
    if (!n.success) throw invalid(n.error.issues, [...loc, 'parameter', index, 'event-number']);
    events.push({
      eventNumber: n.data,
      ...focusOf(part('focus')[0]?.valueReference),
      additionalContext: part('additional-context')
        .map((x) => focusOf(x.valueReference).focus)
        .filter((r): r is string => r !== undefined),
    });
  });
  return {
    format: 'Parameters' as const,
    subscription,
    status: one('status')?.valueCode,
    type: type.data,
    eventsSinceSubscriptionStart: since.data,
    events,
  };
}

function fromSubscriptionStatus(resource: unknown, loc: readonly (string | number)[]) {
  const parsed = SubscriptionStatusSchema.safeParse(resource);
  if (!parsed.success) throw invalid(parsed.error.issues, loc);
  const s = parsed.data;
  return {
    format: 'SubscriptionStatus' as const,
    subscription: s.subscription.reference,
    status: s.status,
    type: s.type,
    eventsSinceSubscriptionStart: s.eventsSinceSubscriptionStart,
    events: (s.notificationEvent ?? []).map((e) => ({
      eventNumber: e.eventNumber,
      ...focusOf(e.focus),
      additionalContext: (e.additionalContext ?? []).map((r) => r.reference),
    })),
  };
}

/** The status part of a status resource (a notification's entry 0, or what `$status` returns). */
export function parseStatusResource(
  resource: unknown,
  loc: readonly (string | number)[],
): Omit<SubscriptionNotification, 'entries' | 'bundleType'> {
  const type = (resource as { resourceType?: unknown } | null)?.resourceType;
  return type === 'SubscriptionStatus'
    ? fromSubscriptionStatus(resource, loc)
    : fromParameters(resource, loc);
}

/** Parses a notification Bundle; throws a 422 naming what is wrong (never values). */
export function parseNotification(
  body: unknown,
  loc: readonly (string | number)[] = ['body'],
): SubscriptionNotification {
  const bundle = NotificationBundleSchema.safeParse(body);
  if (!bundle.success) throw invalid(bundle.error.issues, loc);
  const [first, ...rest] = bundle.data.entry;
  const status = parseStatusResource(first?.resource, [...loc, 'entry', 0, 'resource']);
  return {
    bundleType: bundle.data.type,
    ...status,
    entries: rest.map((e) => ({ fullUrl: e.fullUrl, resource: e.resource })),
  };
}
