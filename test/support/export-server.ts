import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JSONWebKeySet } from 'jose';
import { ExportServerAuth, SIGNING_ALGORITHMS } from './export-server-auth.ts';
import {
  countKept,
  keptLines,
  ndjsonFiles,
  type ExportFilter,
  type NdjsonFile,
} from './export-server-files.ts';

/** The NDJSON sample of the reference Bulk Data server (see its `SOURCE.md`): 25 patients. */
export const BULK_FHIR_FIXTURES = new URL('../fixtures/bulk-fhir/', import.meta.url).pathname;

export interface ExportServerOptions {
  /** The folder of NDJSON files served (`<Type>.ndjson` or `<n>.<Type>.ndjson`), read at each kick-off. */
  folder: string;
  /** How many status polls answer 202 before the manifest. @defaultValue 1 */
  pollsBeforeReady?: number;
  /** The `Retry-After` of a 202 status answer, in seconds. @defaultValue 1 */
  retryAfterSeconds?: number;
  /** `expires_in` of the access tokens. @defaultValue 300 */
  tokenLifetimeSeconds?: number;
  /** Group id -> patient ids; when given, `Group/{id}/$export` of another id is a 404. @defaultValue any id exports everything */
  groups?: Record<string, readonly string[]>;
}

export interface LocalExportServer {
  /** The FHIR base URL (`http://127.0.0.1:<port>/fhir`); kick-off at `${baseUrl}/Patient/$export`… */
  baseUrl: string;
  /** The token endpoint (`http://127.0.0.1:<port>/auth/token`): the client assertion's `aud`. */
  tokenUrl: string;
  /** Registers a Backend Services client: its assertions are verified against `jwks`. */
  registerClient(clientId: string, jwks: JSONWebKeySet): void;
  /** The next download of a file of `type` stops after `lines` lines: the connection is destroyed mid-body. */
  cutAfterLines(type: string, lines: number): void;
  /** Every access token issued so far stops working (401 until the client gets a new one). */
  expireTokens(): void;
  /** Requests received whose decoded path starts with `path` (all requests without it). */
  requests(path?: string): number;
  close(): Promise<void>;
}

interface Job {
  request: string;
  transactionTime: string;
  filter: ExportFilter;
  pollsLeft: number;
  manifest?: Record<string, unknown>;
  files?: NdjsonFile[];
}

const FHIR_JSON = 'application/fhir+json';
const NDJSON_FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson']);

function outcome(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  const severity = status < 400 ? 'information' : 'error';
  const code = status === 401 ? 'login' : status === 404 ? 'not-found' : 'processing';
  res.writeHead(status, { 'content-type': FHIR_JSON, ...headers }).end(
    JSON.stringify({
      resourceType: 'OperationOutcome',
      issue: [{ severity, code, diagnostics: text }],
    }),
  );
}

function json(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function written(res: ServerResponse, chunk: string): Promise<void> {
  return new Promise((resolve) => res.write(chunk, () => resolve()));
}

/**
 * A FHIR Bulk Data `$export` server of ours for tests (no code of the reference server): serves the
 * NDJSON files of `folder` behind SMART Backend Services, on 127.0.0.1 and a free port.
 *
 * - `GET {base}/.well-known/smart-configuration` and `GET {base}/metadata` answer without a token.
 * - `POST /auth/token`: client credentials with a `client_assertion` of a registered client.
 * - Kick-off `GET {base}/$export`, `{base}/Patient/$export`, `{base}/Group/{id}/$export` with
 *   `Accept: application/fhir+json`, `Prefer: respond-async`, `_type`, `_since` (on
 *   `meta.lastUpdated`; a resource without it is kept) and `_outputFormat` (NDJSON only): 202 and
 *   `Content-Location: {base}/bulkstatus/{id}`.
 * - The status URL answers 202 with `Retry-After` `pollsBeforeReady` times, then 200 with the
 *   manifest (one output entry per non-empty file); `DELETE` cancels (then 404 everywhere).
 * - Files at `{base}/bulkfiles/{id}/{name}`, streamed with backpressure.
 * Everything but discovery and the token endpoint answers 401 without a valid bearer token.
 */
export async function startExportServer(options: ExportServerOptions): Promise<LocalExportServer> {
  const pollsBeforeReady = options.pollsBeforeReady ?? 1;
  const retryAfter = String(options.retryAfterSeconds ?? 1);
  const jobs = new Map<string, Job>();
  const cuts = new Map<string, number>();
  const counts = new Map<string, number>();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const baseUrl = `${origin}/fhir`;
  const tokenUrl = `${origin}/auth/token`;
  const auth = new ExportServerAuth(tokenUrl, options.tokenLifetimeSeconds ?? 300);

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') return outcome(res, 405, 'POST only');
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('application/x-www-form-urlencoded')) {
      json(res, 400, { error: 'invalid_request', error_description: 'form body expected' });
      return;
    }
    const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    const answer = await auth.token(form);
    json(res, answer.status, answer.body);
  }

  function discovery(res: ServerResponse): void {
    json(res, 200, {
      token_endpoint: tokenUrl,
      token_endpoint_auth_methods_supported: ['private_key_jwt'],
      token_endpoint_auth_signing_alg_values_supported: [...SIGNING_ALGORITHMS],
      grant_types_supported: ['client_credentials'],
      scopes_supported: ['system/*.read', 'system/*.rs'],
      capabilities: ['client-confidential-asymmetric', 'permission-v1', 'permission-v2'],
    });
  }

  function metadata(res: ServerResponse): void {
    const op = (name: string) => ({
      name: 'export',
      definition: `http://hl7.org/fhir/uv/bulkdata/OperationDefinition/${name}`,
    });
    json(
      res,
      200,
      {
        resourceType: 'CapabilityStatement',
        status: 'active',
        date: new Date().toISOString(),
        kind: 'instance',
        fhirVersion: '4.0.1',
        format: ['json'],
        instantiates: ['http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data'],
        rest: [
          {
            mode: 'server',
            operation: [op('export')],
            resource: [
              { type: 'Patient', operation: [op('patient-export')] },
              { type: 'Group', operation: [op('group-export')] },
            ],
          },
        ],
      },
      FHIR_JSON,
    );
  }

  function kickOff(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    group: string | undefined,
  ): void {
    if (req.method !== 'GET') return outcome(res, 405, 'kick-off is GET here');
    if (!(req.headers.accept ?? '').includes(FHIR_JSON))
      return outcome(res, 400, `Accept must be ${FHIR_JSON}`);
    if (!/\brespond-async\b/.test(String(req.headers.prefer ?? '')))
      return outcome(res, 400, 'Prefer: respond-async is required');
    const format = url.searchParams.get('_outputFormat');
    if (format !== null && !NDJSON_FORMATS.has(format))
      return outcome(res, 400, `_outputFormat ${format} is not supported`);
    const since = url.searchParams.get('_since');
    const sinceMs = since === null ? undefined : Date.parse(since);
    if (sinceMs !== undefined && Number.isNaN(sinceMs))
      return outcome(res, 400, '_since is not an instant');
    const types = url.searchParams
      .getAll('_type')
      .flatMap((t) => t.split(','))
      .map((t) => t.trim())
      .filter((t) => t !== '');
    let patients: ReadonlySet<string> | undefined;
    if (group !== undefined && options.groups !== undefined) {
      const members = options.groups[group];
      if (members === undefined) return outcome(res, 404, `no Group ${group}`);
      patients = new Set(members);
    }
    const id = randomUUID();
    jobs.set(id, {
      request: `${origin}${req.url ?? ''}`,
      transactionTime: new Date().toISOString(),
      filter: { types: types.length === 0 ? undefined : new Set(types), sinceMs, patients },
      pollsLeft: pollsBeforeReady,
    });
    outcome(res, 202, 'export accepted', { 'content-location': `${baseUrl}/bulkstatus/${id}` });
  }

  async function manifestOf(id: string, job: Job): Promise<Record<string, unknown>> {
    if (job.manifest !== undefined) return job.manifest;
    const files = (await ndjsonFiles(options.folder)).filter(
      (f) => job.filter.types === undefined || job.filter.types.has(f.type),
    );
    const output: { type: string; url: string; count: number }[] = [];
    for (const file of files) {
      const count = await countKept(file, job.filter);
      if (count > 0)
        output.push({ type: file.type, url: `${baseUrl}/bulkfiles/${id}/${file.name}`, count });
    }
    job.files = files;
    job.manifest = {
      transactionTime: job.transactionTime,
      request: job.request,
      requiresAccessToken: true,
      output,
      error: [],
    };
    return job.manifest;
  }

  async function status(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const job = jobs.get(id);
    if (job === undefined) return outcome(res, 404, 'no such export');
    if (req.method === 'DELETE') {
      jobs.delete(id);
      return outcome(res, 202, 'export cancelled');
    }
    if (req.method !== 'GET') return outcome(res, 405, 'GET or DELETE');
    if (job.pollsLeft > 0) {
      job.pollsLeft--;
      res.writeHead(202, { 'retry-after': retryAfter, 'x-progress': 'in progress' }).end();
      return;
    }
    json(res, 200, await manifestOf(id, job));
  }

  async function download(res: ServerResponse, id: string, name: string): Promise<void> {
    const job = jobs.get(id);
    const file = job?.files?.find((f) => f.name === name);
    if (job === undefined || file === undefined) return outcome(res, 404, 'no such file');
    const cut = cuts.get(file.type);
    cuts.delete(file.type);
    res.writeHead(200, { 'content-type': 'application/fhir+ndjson' });
    if (cut === 0) {
      await written(res, '');
      res.socket?.destroy();
      return;
    }
    let sent = 0;
    for await (const line of keptLines(file, job.filter)) {
      if (res.destroyed) return;
      sent++;
      if (sent === cut) {
        await written(res, `${line}\n`);
        res.socket?.destroy();
        return;
      }
      if (!res.write(`${line}\n`)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
    }
    res.end();
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', origin);
    const path = decodeURIComponent(url.pathname);
    counts.set(path, (counts.get(path) ?? 0) + 1);
    if (path === '/auth/token') return token(req, res);
    if (path === '/fhir/.well-known/smart-configuration') return discovery(res);
    if (path === '/fhir/metadata') return metadata(res);
    if (!path.startsWith('/fhir/')) return outcome(res, 404, 'not found');
    if (!auth.authorised(req.headers.authorization))
      return outcome(res, 401, 'a valid bearer token is required', {
        'www-authenticate': 'Bearer',
      });
    if (path === '/fhir/$export' || path === '/fhir/Patient/$export')
      return kickOff(req, res, url, undefined);
    const group = /^\/fhir\/Group\/([^/]+)\/\$export$/.exec(path);
    if (group?.[1] !== undefined) return kickOff(req, res, url, group[1]);
    const poll = /^\/fhir\/bulkstatus\/([^/]+)$/.exec(path);
    if (poll?.[1] !== undefined) return status(req, res, poll[1]);
    const file = /^\/fhir\/bulkfiles\/([^/]+)\/([^/]+)$/.exec(path);
    if (file?.[1] !== undefined && file[2] !== undefined && req.method === 'GET')
      return download(res, file[1], file[2]);
    return outcome(res, 404, 'not found');
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) outcome(res, 500, (error as Error).message);
      else res.destroy();
    });
  });

  return {
    baseUrl,
    tokenUrl,
    registerClient: (clientId, jwks) => auth.register(clientId, jwks),
    cutAfterLines: (type, lines) => void cuts.set(type, lines),
    expireTokens: () => auth.expireTokens(),
    requests: (path) =>
      [...counts].reduce(
        (sum, [p, n]) => (path === undefined || p.startsWith(path) ? sum + n : sum),
        0,
      ),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
