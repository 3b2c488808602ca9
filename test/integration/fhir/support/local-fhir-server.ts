import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  /** Path below the base URL, e.g. `Condition/1` or `Subscription/sub-1/$status`. */
  path: string;
  query: Record<string, string>;
  authorized: boolean;
}

export interface StoredEvent {
  eventNumber: number;
  /** `Type/id` of a resource the server holds. */
  focus: string;
}

/**
 * A small FHIR server on a real socket: resources by `Type/id`, a subscription's `$status` and
 * `$events` (R4 backport shapes), a bearer-token check; it records every request it sees.
 */
export class LocalFhirServer {
  readonly token: string;
  readonly seen: SeenRequest[] = [];
  readonly resources = new Map<string, Record<string, unknown>>();
  readonly events = new Map<string, StoredEvent[]>();
  /** `Type/id` of resources deleted here: a read answers 410 Gone. */
  readonly deleted = new Set<string>();
  /** Subscriptions whose `$events` the server does not offer (answered 501). */
  readonly noEventsOperation = new Set<string>();
  readonly #server: Server;
  #baseUrl = '';

  constructor(token: string) {
    this.token = token;
    this.#server = createServer((req, res) => this.#handle(req, res));
  }

  get baseUrl(): string {
    return this.#baseUrl;
  }

  async start(): Promise<this> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    const { port } = this.#server.address() as AddressInfo;
    this.#baseUrl = `http://127.0.0.1:${port}/fhir`;
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  put(resource: Record<string, unknown>): void {
    this.resources.set(`${String(resource.resourceType)}/${String(resource.id)}`, resource);
  }

  addEvent(subscriptionId: string, event: StoredEvent): void {
    const list = this.events.get(subscriptionId) ?? [];
    list.push(event);
    this.events.set(subscriptionId, list);
  }

  /** Requests to paths ending with this (`$status`, `$events`, `Condition/1`). */
  calls(suffix: string): SeenRequest[] {
    return this.seen.filter((r) => r.path.endsWith(suffix));
  }

  #send(res: ServerResponse, status: number, body?: unknown): void {
    res.writeHead(status, { 'content-type': 'application/fhir+json' });
    res.end(body === undefined ? '' : JSON.stringify(body));
  }

  #statusResource(subscriptionId: string, type: string, events: StoredEvent[]) {
    const count = this.events.get(subscriptionId)?.length ?? 0;
    return {
      resourceType: 'Parameters',
      parameter: [
        {
          name: 'subscription',
          valueReference: { reference: `${this.#baseUrl}/Subscription/${subscriptionId}` },
        },
        { name: 'topic', valueCanonical: 'http://example.org/topics/clinical-change' },
        { name: 'status', valueCode: 'active' },
        { name: 'type', valueCode: type },
        { name: 'events-since-subscription-start', valueString: String(count) },
        ...events.map((e) => ({
          name: 'notification-event',
          part: [
            { name: 'event-number', valueString: String(e.eventNumber) },
            { name: 'focus', valueReference: { reference: `${this.#baseUrl}/${e.focus}` } },
          ],
        })),
      ],
    };
  }

  /**
   * `GET <Type>?...`: a searchset of the type's resources, filtered by `identifier`
   * (`system|value` or `value`) and `_lastUpdated=ge<instant>` (on `meta.lastUpdated`); other
   * parameters are recorded (in `seen`) but do not filter.
   */
  #search(type: string, params: URLSearchParams) {
    const identifier = params.get('identifier');
    const since = params.get('_lastUpdated');
    const matches = [...this.resources.values()].filter((r) => {
      if (r.resourceType !== type) return false;
      if (identifier !== null) {
        const ids = (r.identifier as { system?: string; value?: string }[] | undefined) ?? [];
        const [system, value] = identifier.includes('|')
          ? identifier.split('|', 2)
          : [undefined, identifier];
        if (!ids.some((i) => i.value === value && (system === undefined || i.system === system)))
          return false;
      }
      if (since !== null) {
        const at = (r.meta as { lastUpdated?: string } | undefined)?.lastUpdated;
        if (at === undefined || Date.parse(at) < Date.parse(since.replace(/^ge/, ''))) return false;
      }
      return true;
    });
    return {
      resourceType: 'Bundle',
      type: 'searchset',
      total: matches.length,
      entry: matches.map((resource) => ({
        fullUrl: `${this.#baseUrl}/${type}/${String(resource.id)}`,
        resource,
        search: { mode: 'match' },
      })),
    };
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname.replace(/^\/fhir\//, '');
    const authorized = req.headers.authorization === `Bearer ${this.token}`;
    this.seen.push({
      method: req.method ?? '',
      path,
      query: Object.fromEntries(url.searchParams),
      authorized,
    });
    if (!authorized) return this.#send(res, 401, { resourceType: 'OperationOutcome' });
    if (req.method !== 'GET') return this.#send(res, 405);

    const op = /^Subscription\/([^/]+)\/\$(status|events)$/.exec(path);
    if (op !== null) {
      const [, id = '', name] = op;
      if (name === 'status') {
        return this.#send(res, 200, {
          resourceType: 'Bundle',
          type: 'searchset',
          entry: [{ resource: this.#statusResource(id, 'query-status', []) }],
        });
      }
      if (this.noEventsOperation.has(id)) return this.#send(res, 501);
      const since = Number(url.searchParams.get('eventsSinceNumber') ?? 0);
      const until = Number(url.searchParams.get('eventsUntilNumber') ?? Number.MAX_SAFE_INTEGER);
      const wanted = (this.events.get(id) ?? []).filter(
        (e) => e.eventNumber >= since && e.eventNumber <= until,
      );
      return this.#send(res, 200, {
        resourceType: 'Bundle',
        type: 'history',
        entry: [
          { resource: this.#statusResource(id, 'query-event', wanted) },
          ...wanted.map((e) => ({
            fullUrl: `${this.#baseUrl}/${e.focus}`,
            resource: this.resources.get(e.focus),
          })),
        ],
      });
    }
    if (/^[A-Z][A-Za-z]+$/.test(path))
      return this.#send(res, 200, this.#search(path, url.searchParams));
    if (this.deleted.has(path)) return this.#send(res, 410, { resourceType: 'OperationOutcome' });
    const resource = this.resources.get(path);
    if (resource === undefined) return this.#send(res, 404, { resourceType: 'OperationOutcome' });
    return this.#send(res, 200, resource);
  }
}
