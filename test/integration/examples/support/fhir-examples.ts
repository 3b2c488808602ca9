import { readFileSync } from 'node:fs';

/**
 * The Subscription examples of examples/fhir-subscriptions as a FHIR server would take them
 * (after `envsubst` fills their two placeholders), and the requests such a server then makes to
 * the ingester: classic R4 rest-hook deliveries as HAPI FHIR makes them, and topic-based
 * notification Bundles in the shape of the Subscriptions R5 Backport IG (R4) and of FHIR R5.
 */
type Json = Record<string, unknown>;

export const SUBSCRIPTIONS_DIR = new URL(
  '../../../../examples/fhir-subscriptions/',
  import.meta.url,
);

export function example(path: string): Json {
  return JSON.parse(readFileSync(new URL(path, SUBSCRIPTIONS_DIR), 'utf8')) as Json;
}

/** The placeholders an example may hold, filled by the installer (see the docs). */
export interface Placeholders {
  CW_INGEST_BASE_URL: string;
  INGEST_TOKEN: string;
}

/** Every `${NAME}` written in an example. */
export function placeholdersIn(resource: Json): string[] {
  return [...JSON.stringify(resource).matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map(
    (m) => m[1] as string,
  );
}

/** The example as `envsubst` writes it with these values. */
export function installed(resource: Json, values: Placeholders): Json {
  const text = JSON.stringify(resource).replace(
    /\$\{(CW_INGEST_BASE_URL|INGEST_TOKEN)\}/g,
    (_whole, name: keyof Placeholders) => JSON.stringify(values[name]).slice(1, -1),
  );
  return JSON.parse(text) as Json;
}

/** A request the FHIR server makes to the ingester. */
export interface Delivery {
  method: 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body: string;
}

const obj = (v: unknown): Json => (v ?? {}) as Json;

/** `channel.header` strings split at the first colon, as HAPI FHIR sends them. */
function headerLines(lines: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of (lines as string[] | undefined) ?? []) {
    const at = line.indexOf(':');
    if (at > 0) headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return headers;
}

const ref = (r: Json) => `${String(r.resourceType)}/${String(r.id)}`;

/**
 * A classic R4 rest-hook delivery, as HAPI FHIR's rest-hook deliverer makes it: with
 * `channel.payload`, `PUT <endpoint>/<Type>/<id>` with the resource (a delete: `DELETE` there);
 * without, an empty `POST <endpoint>` (HAPI posts an empty form: content type
 * `application/x-www-form-urlencoded`).
 */
export function classicDelivery(
  subscription: Json,
  change: { resource: Json } | { deleted: Json } | 'ping',
): Delivery {
  const channel = obj(subscription.channel);
  const endpoint = String(channel.endpoint);
  const headers = headerLines(channel.header);
  if (change === 'ping' || channel.payload === undefined) {
    return {
      method: 'POST',
      url: endpoint,
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' },
      body: '',
    };
  }
  if ('deleted' in change) {
    return { method: 'DELETE', url: `${endpoint}/${ref(change.deleted)}`, headers, body: '' };
  }
  return {
    method: 'PUT',
    url: `${endpoint}/${ref(change.resource)}`,
    headers: { ...headers, 'content-type': `${String(channel.payload)}; charset=UTF-8` },
    body: JSON.stringify(change.resource),
  };
}

/** One event of a notification: its number, focus and the resources sent with it. */
export interface TopicEvent {
  n: number;
  focus: Json;
  context?: Json[];
}

export interface Notify {
  /** The FHIR server's base URL (absolute references in the notification). */
  base: string;
  subscriptionId: string;
  type: 'handshake' | 'heartbeat' | 'event-notification';
  eventsSince: number;
  events?: TopicEvent[];
}

const TIMESTAMP = '2026-11-20T10:00:00Z';
const BACKPORT = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition/';

/** The entries after the status: id-only (fullUrl and request) or full-resource. */
function payloadEntries(content: string, n: Notify): Json[] {
  if (content === 'empty') return [];
  return (n.events ?? []).flatMap((e) =>
    [e.focus, ...(e.context ?? [])].map((r) => ({
      fullUrl: `${n.base}/${ref(r)}`,
      ...(content === 'full-resource' ? { resource: r } : {}),
      request: { method: 'PUT', url: ref(r) },
      response: { status: '200' },
    })),
  );
}

function statusRequest(n: Notify) {
  return {
    request: { method: 'GET', url: `${n.base}/Subscription/${n.subscriptionId}/$status` },
    response: { status: '200' },
  };
}

/** The R4 backport notification of a Subscription: `history` Bundle, `Parameters` status. */
export function backportNotification(subscription: Json, n: Notify): Json {
  const channel = obj(subscription.channel);
  const content = String(
    ((obj(channel._payload).extension as Json[] | undefined) ?? []).find(
      (x) => x.url === `${BACKPORT}backport-payload-content`,
    )?.valueCode,
  );
  const events = (n.events ?? []).map((e) => ({
    name: 'notification-event',
    part: [
      { name: 'event-number', valueString: String(e.n) },
      { name: 'timestamp', valueInstant: TIMESTAMP },
      ...(content === 'empty'
        ? []
        : [
            { name: 'focus', valueReference: { reference: `${n.base}/${ref(e.focus)}` } },
            ...(e.context ?? []).map((c) => ({
              name: 'additional-context',
              valueReference: { reference: `${n.base}/${ref(c)}` },
            })),
          ]),
    ],
  }));
  const status = {
    resourceType: 'Parameters',
    meta: { profile: [`${BACKPORT}backport-subscription-status-r4`] },
    parameter: [
      {
        name: 'subscription',
        valueReference: { reference: `${n.base}/Subscription/${n.subscriptionId}` },
      },
      ...(content === 'empty' ? [] : [{ name: 'topic', valueCanonical: subscription.criteria }]),
      { name: 'status', valueCode: 'active' },
      { name: 'type', valueCode: n.type },
      { name: 'events-since-subscription-start', valueString: String(n.eventsSince) },
      ...events,
    ],
  };
  return {
    resourceType: 'Bundle',
    meta: { profile: [`${BACKPORT}backport-subscription-notification-r4`] },
    type: 'history',
    timestamp: TIMESTAMP,
    entry: [
      {
        fullUrl: 'urn:uuid:4b1a6c35-2f0e-4b8e-9d47-5c1f0a6f1e01',
        resource: status,
        ...statusRequest(n),
      },
      ...payloadEntries(content, n),
    ],
  };
}

/** The R5 notification of a Subscription: `subscription-notification` Bundle, SubscriptionStatus. */
export function r5Notification(subscription: Json, n: Notify): Json {
  const content = String(subscription.content ?? 'empty');
  const status = {
    resourceType: 'SubscriptionStatus',
    status: 'active',
    type: n.type,
    eventsSinceSubscriptionStart: String(n.eventsSince),
    ...(n.events === undefined
      ? {}
      : {
          notificationEvent: n.events.map((e) => ({
            eventNumber: String(e.n),
            timestamp: TIMESTAMP,
            ...(content === 'empty'
              ? {}
              : {
                  focus: { reference: `${n.base}/${ref(e.focus)}` },
                  ...(e.context === undefined
                    ? {}
                    : {
                        additionalContext: e.context.map((c) => ({
                          reference: `${n.base}/${ref(c)}`,
                        })),
                      }),
                }),
          })),
        }),
    subscription: { reference: `${n.base}/Subscription/${n.subscriptionId}` },
    topic: subscription.topic,
  };
  return {
    resourceType: 'Bundle',
    type: 'subscription-notification',
    timestamp: TIMESTAMP,
    entry: [
      { fullUrl: 'urn:uuid:9f0c2d7e-6a51-4a3b-8f4e-2b7d1c0e5a02', resource: status },
      ...payloadEntries(content, n),
    ],
  };
}

/** The POST of a topic-based notification to the Subscription's endpoint. */
export function topicDelivery(subscription: Json, bundle: Json): Delivery {
  const channel = obj(subscription.channel);
  const r5 = subscription.topic !== undefined;
  const headers = r5
    ? Object.fromEntries(
        ((subscription.parameter as Json[] | undefined) ?? []).map((p) => [
          String(p.name),
          String(p.value),
        ]),
      )
    : headerLines(channel.header);
  const contentType = String(r5 ? subscription.contentType : channel.payload);
  return {
    method: 'POST',
    url: String(r5 ? subscription.endpoint : channel.endpoint),
    headers: { ...headers, 'content-type': `${contentType}; charset=UTF-8` },
    body: JSON.stringify(bundle),
  };
}
