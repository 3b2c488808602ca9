import got, { RequestError, type Agents } from 'got';
import type { Config } from '../../config/config-schema.ts';
import { outboundAgents } from '../../connections/outbound-agents.ts';
import { FhirServerUnavailableError } from './fhir-errors.ts';

export interface FhirClientOptions {
  /** `fhir.base_url` (`FHIR_BASE_URL`). */
  baseUrl: string;
  /** `FHIR_TOKEN`: sent as a bearer token when set. */
  token?: string | undefined;
  timeoutMs: number;
  /** got's retries of a GET (network errors, 408, 429, 5xx). @defaultValue 2 */
  retryLimit?: number;
  /** got's agents: a proxy and a CA bundle. @defaultValue got's defaults */
  agent?: Agents | undefined;
}

/** Pages of a search followed at most. */
const DEFAULT_MAX_PAGES = 20;
/** A read that found nothing: 404 or 410 (deleted). */
const GONE = new Set([404, 410]);
/** Statuses by which a server says it has no `$events` operation. */
const UNSUPPORTED = new Set([400, 404, 405, 501]);

/**
 * Reads from the hospital's FHIR server: resources of id-only notifications, and a subscription's
 * `$status` and `$events`. Paths are built from `Type/id` under the configured base URL only —
 * never from absolute URLs a notification names — and redirects are not followed, so the token
 * goes nowhere else. Errors carry no URL, token or body.
 */
export class FhirClient {
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #retryLimit: number;
  readonly #agent: Agents | undefined;

  /**
   * The client of `fhir.*` (`FHIR_BASE_URL`, `FHIR_TOKEN`, `fhir.timeout_ms`) through the outbound
   * network's proxy and CA bundle (`outbound.*`); undefined when `fhir.base_url` is not set.
   */
  static fromConfig(
    config: Pick<Config, 'fhir'> & Partial<Pick<Config, 'outbound'>>,
  ): FhirClient | undefined {
    const { fhir, outbound } = config;
    if (fhir.base_url === null) return undefined;
    return new FhirClient({
      baseUrl: fhir.base_url,
      token: fhir.token,
      timeoutMs: fhir.timeout_ms,
      agent: outbound && outboundAgents(outbound),
    });
  }

  constructor(options: FhirClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#headers = { accept: 'application/fhir+json, application/json;q=0.9' };
    if (options.token) this.#headers.authorization = `Bearer ${options.token}`;
    this.#timeoutMs = options.timeoutMs;
    this.#retryLimit = options.retryLimit ?? 2;
    this.#agent = options.agent;
  }

  async #get(
    path: string,
    searchParams?: Record<string, string>,
  ): Promise<{ status: number; body: unknown }> {
    let response;
    try {
      response = await got(`${this.#base}/${path}`, {
        method: 'GET',
        headers: this.#headers,
        ...(searchParams === undefined ? {} : { searchParams }),
        responseType: 'text',
        throwHttpErrors: false,
        followRedirect: false,
        timeout: { request: this.#timeoutMs },
        retry: {
          limit: this.#retryLimit,
          methods: ['GET'],
          statusCodes: [408, 429, 500, 502, 503, 504],
          maxRetryAfter: this.#timeoutMs,
        },
        ...(this.#agent === undefined ? {} : { agent: this.#agent }),
      });
    } catch (error) {
      // A got error holds the request (the token in its headers): only its code goes on.
      const code = error instanceof RequestError ? error.code : 'unknown';
      throw new FhirServerUnavailableError(`the FHIR server could not be reached (${code})`);
    }
    const status = response.statusCode;
    if (status >= 200 && status <= 299) {
      try {
        return { status, body: JSON.parse(response.body) as unknown };
      } catch {
        throw new FhirServerUnavailableError(
          'the FHIR server answered with a body that is not JSON',
        );
      }
    }
    return { status, body: undefined };
  }

  #fail(status: number, what: string): never {
    throw new FhirServerUnavailableError(`the FHIR server answered ${status} to ${what}`);
  }

  /** A resource by type and id; undefined when the server says it is gone (404, 410). */
  async read(type: string, id: string): Promise<unknown> {
    const { status, body } = await this.#get(`${type}/${encodeURIComponent(id)}`);
    if (body !== undefined) return body;
    if (GONE.has(status)) return undefined;
    return this.#fail(status, 'a read');
  }

  /**
   * A read that tells a deleted resource (410) from one never seen or not visible (404): a
   * Patient the server answers 410 for was deleted there.
   */
  async readOrGone(type: string, id: string): Promise<{ resource: unknown } | { gone: 404 | 410 }> {
    const { status, body } = await this.#get(`${type}/${encodeURIComponent(id)}`);
    if (body !== undefined) return { resource: body };
    if (status === 404 || status === 410) return { gone: status };
    return this.#fail(status, 'a read');
  }

  /**
   * `GET <type>?<params>`: the resources of that type in the searchset (every page the server
   * links as `next`, up to `maxPages`, and only pages under the configured base URL).
   */
  async search(
    type: string,
    params: Record<string, string>,
    maxPages = DEFAULT_MAX_PAGES,
  ): Promise<unknown[]> {
    const out: unknown[] = [];
    let path = type;
    let searchParams: Record<string, string> | undefined = params;
    for (let page = 0; page < maxPages; page++) {
      const { status, body } = await this.#get(path, searchParams);
      if (body === undefined) return this.#fail(status, 'a search');
      const bundle = body as {
        resourceType?: unknown;
        entry?: { resource?: unknown; search?: { mode?: unknown } }[];
        link?: { relation?: unknown; url?: unknown }[];
      };
      if (bundle.resourceType !== 'Bundle') {
        throw new FhirServerUnavailableError('the FHIR server answered a search without a Bundle');
      }
      for (const entry of bundle.entry ?? []) {
        const resource = entry.resource as { resourceType?: unknown } | undefined;
        // `include` and `outcome` entries are not matches.
        if (entry.search?.mode !== undefined && entry.search.mode !== 'match') continue;
        if (resource?.resourceType === type) out.push(resource);
      }
      const next = bundle.link?.find((l) => l.relation === 'next')?.url;
      if (typeof next !== 'string' || !next.startsWith(`${this.#base}/`)) return out;
      const url = new URL(next);
      path = url.pathname.slice(new URL(`${this.#base}/`).pathname.length);
      searchParams = Object.fromEntries(url.searchParams);
    }
    return out;
  }

  /** `GET Subscription/<id>/$status`. */
  async subscriptionStatus(subscriptionId: string): Promise<unknown> {
    const { status, body } = await this.#get(
      `Subscription/${encodeURIComponent(subscriptionId)}/$status`,
    );
    if (body !== undefined) return body;
    return this.#fail(status, '$status');
  }

  /**
   * `GET Subscription/<id>/$events?eventsSinceNumber=..&eventsUntilNumber=..`: a notification
   * Bundle of the events; undefined when the server has no such operation.
   */
  async subscriptionEvents(
    subscriptionId: string,
    sinceNumber: number,
    untilNumber: number,
  ): Promise<unknown> {
    const { status, body } = await this.#get(
      `Subscription/${encodeURIComponent(subscriptionId)}/$events`,
      { eventsSinceNumber: String(sinceNumber), eventsUntilNumber: String(untilNumber) },
    );
    if (body !== undefined) return body;
    if (UNSUPPORTED.has(status)) return undefined;
    return this.#fail(status, '$events');
  }
}
