import type { FaultProfile } from '../../../../src/simulator/fault-profile.ts';

/** One entry of the simulator's request log. */
export interface LoggedRequest {
  method: string;
  /** With the query string. */
  path: string;
  status: number | null;
  headers: Record<string, string | undefined>;
  body: unknown;
}

/** The simulator's admin API, spoken over HTTP like any outside tool would. */
export class SimulatorAdmin {
  readonly #url: string;
  readonly #adminKey: string;

  constructor(url: string, adminKey: string) {
    this.#url = url.replace(/\/+$/, '');
    this.#adminKey = adminKey;
  }

  async setFaults(profile: FaultProfile): Promise<void> {
    await this.#send('POST', '/_admin/faults', profile);
  }

  async requests(): Promise<LoggedRequest[]> {
    const body = await this.#send('GET', '/_admin/requests');
    return (
      Array.isArray(body) ? body : (body as { requests: unknown }).requests
    ) as LoggedRequest[];
  }

  /** The service requests only (the simulator leaves admin calls out already; this makes sure). */
  async serviceRequests(): Promise<LoggedRequest[]> {
    return (await this.requests()).filter((r) => !r.path.startsWith('/_admin'));
  }

  async reset(): Promise<void> {
    await this.setFaults({});
    await this.#send('DELETE', '/_admin/requests');
  }

  async #send(method: string, path: string, body?: unknown): Promise<unknown> {
    const response = await fetch(`${this.#url}${path}`, {
      method,
      headers: {
        'x-admin-key': this.#adminKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  }
}
