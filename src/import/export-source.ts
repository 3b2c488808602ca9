import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { request } from 'undici';
import { z } from 'zod';
import type { BackendServicesAuth } from './backend-services-auth.ts';
import { jsonOrUndefined, withSlash } from './http-text.ts';
import type { ImportSource } from './bulk-import.ts';
import { ExportFailedError } from './import-errors.ts';
import type { ImportFile, ImportState } from './import-state.ts';

/** `$export` at the system, Patient or Group level. */
export type ExportLevel = 'system' | 'patient' | 'group';

const ManifestSchema = z.looseObject({
  transactionTime: z.string(),
  requiresAccessToken: z.boolean().optional(),
  output: z.array(z.looseObject({ type: z.string(), url: z.url(), count: z.int().optional() })),
  error: z.array(z.looseObject({ type: z.string(), url: z.string() })).optional(),
});

export interface ExportSourceOptions {
  fhirBaseUrl: string;
  level: ExportLevel;
  groupId?: string | undefined;
  /** `_type`: the resource types the record uses. */
  types: readonly string[];
  /** `_since`: only resources changed since (an incremental run). */
  since?: string | undefined;
  /** Undefined for an open server (no token). */
  auth?: BackendServicesAuth | undefined;
  logger: Logger;
  /** Bounds on the `Retry-After` waits (seconds). @defaultValue 1 and 120 */
  minWaitSeconds?: number;
  maxWaitSeconds?: number;
  /** Waits `ms` (tests pass none: the real timer). */
  wait?: (ms: number) => Promise<void>;
}

/** About how many bytes a resource line takes, to size the spill from the manifest's counts. */
const BYTES_PER_LINE = 1_500;

const realWait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The seconds of a `Retry-After` (delay or HTTP date), undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}

/**
 * A FHIR server's Bulk Data `$export` (FHIR Bulk Data Access 2.0): kicks off with
 * `Prefer: respond-async`, polls the status URL as `Retry-After` says, reads the manifest, streams
 * each NDJSON file, and deletes the export once every file is read. Every request carries the
 * Backend Services token when one is configured; a file only when the manifest says it needs it.
 */
export class ExportSource implements ImportSource {
  readonly identity: string;
  readonly #o: ExportSourceOptions;
  readonly #wait: (ms: number) => Promise<void>;

  constructor(options: ExportSourceOptions) {
    this.#o = options;
    this.#wait = options.wait ?? realWait;
    this.identity = JSON.stringify([
      'export',
      options.fhirBaseUrl,
      options.level,
      options.groupId ?? null,
      [...options.types].sort(),
      options.since ?? null,
    ]);
  }

  /** The kick-off URL of the level, with `_type` and `_since`. */
  kickOffUrl(): URL {
    const { level, groupId } = this.#o;
    const path =
      level === 'system'
        ? '$export'
        : level === 'patient'
          ? 'Patient/$export'
          : `Group/${encodeURIComponent(groupId ?? '')}/$export`;
    const url = new URL(path, withSlash(this.#o.fhirBaseUrl));
    if (this.#o.types.length > 0) url.searchParams.set('_type', this.#o.types.join(','));
    if (this.#o.since !== undefined) url.searchParams.set('_since', this.#o.since);
    return url;
  }

  async #headers(accept: string, withToken = true): Promise<Record<string, string>> {
    const headers: Record<string, string> = { accept };
    if (withToken && this.#o.auth !== undefined) {
      headers['authorization'] = `Bearer ${await this.#o.auth.token()}`;
    }
    return headers;
  }

  async #kickOff(): Promise<string> {
    const url = this.kickOffUrl();
    const answer = await request(url, {
      headers: { ...(await this.#headers('application/fhir+json')), prefer: 'respond-async' },
    });
    const text = await answer.body.text();
    const location = answer.headers['content-location'];
    if (answer.statusCode !== 202 || typeof location !== 'string') {
      const why = answer.statusCode === 202 ? ' without Content-Location' : outcomeText(text);
      throw new ExportFailedError(
        `the $export kick-off (${url.pathname}) answered ${answer.statusCode}${why}`,
      );
    }
    return new URL(location, url).href;
  }

  /** Polls until the manifest: 202 waits as `Retry-After` says; 429 and 5xx are retried. */
  async #manifest(statusUrl: string): Promise<z.infer<typeof ManifestSchema>> {
    const min = this.#o.minWaitSeconds ?? 1;
    const max = this.#o.maxWaitSeconds ?? 120;
    let failures = 0;
    for (;;) {
      const answer = await request(statusUrl, {
        headers: await this.#headers('application/json'),
      });
      const text = await answer.body.text();
      const status = answer.statusCode;
      if (status === 200) {
        const parsed = ManifestSchema.safeParse(jsonOrUndefined(text));
        if (!parsed.success) {
          throw new ExportFailedError('the export status answered 200 with no manifest we read');
        }
        return parsed.data;
      }
      const header = answer.headers['retry-after'];
      const after = retryAfterSeconds(typeof header === 'string' ? header : undefined);
      if (status === 202) {
        const progress = answer.headers['x-progress'];
        this.#o.logger.debug(
          { status, progress: typeof progress === 'string' ? progress.slice(0, 100) : undefined },
          'export in progress',
        );
      } else if (status === 429 || status >= 500) {
        if (++failures > 5) {
          throw new ExportFailedError(`the export status answered ${status} six times in a row`);
        }
      } else {
        throw new ExportFailedError(`the export status answered ${status}: the export failed`);
      }
      const seconds = Math.min(max, Math.max(min, after ?? 2 ** failures));
      await this.#wait(seconds * 1000);
    }
  }

  async list(
    state: ImportState,
    save: () => Promise<void>,
  ): Promise<{ files: ImportFile[]; estimatedBytes: number }> {
    if (state.export === null) {
      state.export = {
        status_url: await this.#kickOff(),
        transaction_time: null,
        requires_token: true,
      };
      await save();
      this.#o.logger.info({ run_id: state.run_id }, 'export kicked off');
    }
    const manifest = await this.#manifest(state.export.status_url);
    state.export.transaction_time = manifest.transactionTime;
    state.export.requires_token = manifest.requiresAccessToken ?? false;
    if ((manifest.error ?? []).length > 0) {
      this.#o.logger.warn(
        { run_id: state.run_id, error_files: manifest.error?.length },
        'the export lists OperationOutcome files: some resources were not exported',
      );
    }
    const files = manifest.output.map((o) => ({
      type: o.type,
      location: o.url,
      count: o.count ?? null,
      lines_done: 0,
      done: false,
    }));
    const lines = files.reduce((n, f) => n + (f.count ?? 10_000), 0);
    return { files, estimatedBytes: lines * BYTES_PER_LINE };
  }

  async open(file: ImportFile, state: ImportState): Promise<Readable> {
    const withToken = state.export?.requires_token === true;
    const answer = await request(file.location, {
      headers: await this.#headers('application/fhir+ndjson', withToken),
    });
    if (answer.statusCode !== 200) {
      await answer.body.dump();
      throw new ExportFailedError(
        `the ${file.type} file answered ${answer.statusCode} (an expired export needs --restart)`,
      );
    }
    return answer.body;
  }

  async finished(state: ImportState): Promise<void> {
    if (state.export === null) return;
    try {
      const answer = await request(state.export.status_url, {
        method: 'DELETE',
        headers: await this.#headers('application/json'),
      });
      await answer.body.dump();
    } catch (err) {
      this.#o.logger.warn({ err }, 'the export could not be deleted on the server');
    }
  }
}

const OutcomeSchema = z.looseObject({
  resourceType: z.literal('OperationOutcome'),
  issue: z.array(z.looseObject({ diagnostics: z.string().optional() })).min(1),
});

/**
 * `: <diagnostics>` of an OperationOutcome answer (the server's own words on the request, such as
 * an unsupported `_type`: no patient data), at most 200 characters; empty otherwise.
 */
export function outcomeText(text: string): string {
  const parsed = OutcomeSchema.safeParse(jsonOrUndefined(text));
  const diagnostics = parsed.success ? parsed.data.issue[0]?.diagnostics : undefined;
  return diagnostics === undefined ? '' : `: ${diagnostics.slice(0, 200)}`;
}
