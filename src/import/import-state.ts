import { randomBytes, createSecretKey, type KeyObject } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { ImportStateError } from './import-errors.ts';

/** Errors kept with their file and line (more are counted). */
export const MAX_LISTED_ERRORS = 100;

const ImportErrorSchema = z.object({
  file: z.string(),
  line: z.int(),
  code: z.string(),
  message: z.string(),
});
export type ImportLineError = z.infer<typeof ImportErrorSchema>;

const FileSchema = z.object({
  /** The resource type the source names the file for (`mixed` when it names none). */
  type: z.string(),
  /** The file's path (a folder) or URL (an export's manifest). */
  location: z.string(),
  /** Lines the manifest announces (`count`), null when not known. */
  count: z.int().nullable(),
  /** Lines read and spread into the buckets so far (the resume point). */
  lines_done: z.int(),
  done: z.boolean(),
});
export type ImportFile = z.infer<typeof FileSchema>;

/** The per-run summary (the command's answer), as the checkpoints keep it. */
export const ImportSummarySchema = z.object({
  /** Lines read: resources by type, and those of a type the record does not use. */
  resources: z.record(z.string(), z.int()),
  ignored_resources: z.record(z.string(), z.int()),
  /** Resources of a used type that name no Patient (`subject`/`patient`). */
  without_patient: z.int(),
  patients: z.int(),
  /** Patients whose record changed (the rest were as stored: a re-run). */
  patients_changed: z.int(),
  queries_opened: z.int(),
  /** Conditions whose codes no terminology source mapped (`cw_unmapped_problems_total`). */
  unmapped_problems: z.int(),
  errors: z.int(),
  error_list: z.array(ImportErrorSchema),
});
export type ImportSummary = z.infer<typeof ImportSummarySchema>;

export const ImportStateSchema = z.object({
  format: z.literal('concordance-worker-bulk-import'),
  version: z.literal(1),
  run_id: z.uuid(),
  /** What the run reads (a folder, or a server and its `$export` parameters): a hash of it. */
  source_id: z.string(),
  started_at: z.iso.datetime(),
  finished_at: z.iso.datetime().nullable(),
  /** The spill's key, sealed under the crosswalk key (`import-spill:<run_id>`). */
  sealed_key: z.string(),
  /** The `$export` under way: its status URL, and the manifest's time once complete. */
  export: z
    .object({
      status_url: z.string(),
      transaction_time: z.string().nullable(),
      /** The manifest's `requiresAccessToken`: the files are fetched with the bearer token. */
      requires_token: z.boolean(),
    })
    .nullable(),
  /** Null until the source lists its files (an export's manifest). */
  files: z.array(FileSchema).nullable(),
  /** Each spill bucket's size at the last checkpoint. */
  buckets: z.array(z.int()),
  phase: z.enum(['spreading', 'committing', 'done']),
  /** Buckets committed, in order: the second phase resumes at this one. */
  buckets_done: z.int(),
  summary: ImportSummarySchema,
});
export type ImportState = z.infer<typeof ImportStateSchema>;

export const emptySummary = (): ImportSummary => ({
  resources: {},
  ignored_resources: {},
  without_patient: 0,
  patients: 0,
  patients_changed: 0,
  queries_opened: 0,
  unmapped_problems: 0,
  errors: 0,
  error_list: [],
});

/** Adds one error to a summary: counted always, listed while the list is short. */
export function noteError(summary: ImportSummary, error: ImportLineError): void {
  summary.errors++;
  if (summary.error_list.length < MAX_LISTED_ERRORS) summary.error_list.push(error);
}

/**
 * Adds the counts of a bucket the second phase finished (patients, patients changed, queries,
 * unmapped problems, errors) to the run's summary: only then, since a bucket cut short is
 * committed again and must not count twice.
 */
export function addBucketCounts(summary: ImportSummary, bucket: ImportSummary): void {
  summary.patients += bucket.patients;
  summary.patients_changed += bucket.patients_changed;
  summary.queries_opened += bucket.queries_opened;
  summary.unmapped_problems += bucket.unmapped_problems;
  summary.errors += bucket.errors;
  const room = MAX_LISTED_ERRORS - summary.error_list.length;
  summary.error_list.push(...bucket.error_list.slice(0, Math.max(0, room)));
}

const STATE_FILE = 'state.json';
const keyContext = (runId: string) => `import-spill:${runId}`;

/**
 * The run's state in its folder (`state.json`, written whole and renamed into place, so that a
 * crash leaves the previous checkpoint), with the spill buckets beside it. The spill key is random
 * per run and kept sealed under the crosswalk key: the folder alone opens nothing.
 */
export class ImportStateFile {
  readonly folder: string;
  readonly #keys: CrosswalkKeys;

  constructor(folder: string, keys: CrosswalkKeys) {
    this.folder = folder;
    this.#keys = keys;
  }

  /** The state of the run in the folder, or undefined when it holds none. */
  async load(): Promise<ImportState | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.folder, STATE_FILE), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const parsed = ImportStateSchema.safeParse(JSON.parse(text));
    if (!parsed.success) {
      throw new ImportStateError(
        `${join(this.folder, STATE_FILE)} is not a state this release reads: start over with --restart`,
      );
    }
    return parsed.data;
  }

  /** A new run's state, with a fresh spill key. */
  create(runId: string, sourceId: string, now: Date): ImportState {
    return {
      format: 'concordance-worker-bulk-import',
      version: 1,
      run_id: runId,
      source_id: sourceId,
      started_at: now.toISOString(),
      finished_at: null,
      sealed_key: this.#keys.seal(randomBytes(32), keyContext(runId)),
      export: null,
      files: null,
      buckets: [],
      phase: 'spreading',
      buckets_done: 0,
      summary: emptySummary(),
    };
  }

  /** The run's spill key. */
  spillKey(state: ImportState): KeyObject {
    try {
      return createSecretKey(this.#keys.open(state.sealed_key, keyContext(state.run_id)));
    } catch (err) {
      throw new ImportStateError(
        'the run was started under another CROSSWALK_KEY: its spill cannot be read; start over with --restart',
        { cause: err },
      );
    }
  }

  async save(state: ImportState): Promise<void> {
    await mkdir(this.folder, { recursive: true });
    const path = join(this.folder, STATE_FILE);
    await writeFile(`${path}.next`, `${JSON.stringify(state)}\n`, { mode: 0o600 });
    await rename(`${path}.next`, path);
  }
}
