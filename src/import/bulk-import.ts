import { createHash, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { isConcordanceError } from '../errors/concordance-error.ts';
import { IngestHttpError } from '../ingest/errors/ingest-http-error.ts';
import type { BundleMode } from '../ingest/fhir/fhir-ingest.ts';
import { MAPPED_TYPES } from '../ingest/fhir/map-resource.ts';
import { ImportStateError } from './import-errors.ts';
import type { ImportProgress } from './import-progress.ts';
import {
  addBucketCounts,
  emptySummary,
  noteError,
  type ImportFile,
  type ImportState,
  type ImportStateFile,
  type ImportSummary,
} from './import-state.ts';
import { ndjsonLines } from './ndjson-lines.ts';
import { patientIdOf } from './resource-patient.ts';
import { bucketCountFor, SpillBuckets, type SpilledResource } from './spill-buckets.ts';

/** Where a run's NDJSON comes from: a folder, or a FHIR server's `$export`. */
export interface ImportSource {
  /** What the run reads, without secrets: a run resumes only for the same source. */
  readonly identity: string;
  /**
   * The files to read, and about how many bytes they hold (to size the spill). An export source
   * kicks off its `$export` here, or goes on polling the one `state.export` names, saving its
   * status URL through `save` as soon as it has one.
   */
  list(
    state: ImportState,
    save: () => Promise<void>,
  ): Promise<{ files: ImportFile[]; estimatedBytes: number }>;
  /** One file's content as a stream (read with backpressure). */
  open(file: ImportFile, state: ImportState): Promise<Readable>;
  /** Every file is read: an export source deletes the export on the server. */
  finished?(state: ImportState): Promise<void>;
}

/** The FHIR feed's Bundle path (`FhirIngest.applyBundle`): one commit per patient of the Bundle. */
export interface PatientBundles {
  applyBundle(
    body: unknown,
    mode?: BundleMode,
  ): Promise<{ patients: { changed: boolean; queued?: number | undefined }[] }>;
}

export interface BulkImportOptions {
  source: ImportSource;
  state: ImportStateFile;
  bundles: PatientBundles;
  /** How each patient's resources change its record (`merge`: the default; see docs). */
  mode: BundleMode;
  /** Patients committed at once. */
  concurrency: number;
  /** Waits while the queries' backlog is over the import's share (see ImportPacer). */
  pacer?: { ready(): Promise<void>; opened(queries: number): void } | undefined;
  progress?: ImportProgress | undefined;
  /** The process's total of `cw_unmapped_problems_total` (counted per bucket into the summary). */
  unmapped?: (() => Promise<number>) | undefined;
  /** Discard the state folder's run and start over. */
  restart: boolean;
  logger: Logger;
  /** Lines between checkpoints in the first phase. @defaultValue 10,000 */
  checkpointLines?: number;
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
}

/** What the command answers: the run's state, and whether this call did any of it. */
export interface BulkImportOutcome {
  state: ImportState;
  /** The folder's run had already finished: nothing was read (`--restart` imports again). */
  alreadyDone: boolean;
}

const sourceIdOf = (identity: string) =>
  createHash('sha256').update(identity).digest('hex').slice(0, 32);

/**
 * A FHIR Bulk Data import, in two phases that each resume where a crash left them.
 *
 * 1. **Spreading**: each NDJSON file is streamed line by line; each resource of a type the record
 *    uses goes, sealed, to its patient's spill bucket. A checkpoint (every `checkpointLines` lines
 *    and at each file's end) records the file's line and the buckets' sizes.
 * 2. **Committing**: bucket by bucket, each patient's resources become one `collection` Bundle
 *    applied through the FHIR feed's Bundle path: one commit per patient, so one set of queries,
 *    paced by the queries' backlog. A bucket done is checkpointed; a bucket cut short is committed
 *    again, which opens nothing twice (the records are as they were: `unchanged`).
 */
export async function runBulkImport(options: BulkImportOptions): Promise<BulkImportOutcome> {
  const { source, state: file, logger } = options;
  const now = options.now ?? (() => new Date());
  const sourceId = sourceIdOf(source.identity);
  let state = await file.load();
  // A run that stopped before its source answered (a refused kick-off) read nothing: replaced.
  const nothingRead = state?.export === null && state.files === null;
  if (state !== undefined && (options.restart || (nothingRead && state.source_id !== sourceId))) {
    await rm(file.folder, { recursive: true, force: true });
    state = undefined;
  }
  if (state !== undefined && state.source_id !== sourceId) {
    throw new ImportStateError(
      `${file.folder} holds a run of another source: use another --state-dir, or --restart to discard it`,
    );
  }
  if (state?.phase === 'done') return { state, alreadyDone: true };
  if (state === undefined) {
    state = file.create(randomUUID(), sourceId, now());
    await file.save(state);
    logger.info({ run_id: state.run_id }, 'bulk import started');
  } else {
    logger.info(
      { run_id: state.run_id, phase: state.phase, buckets_done: state.buckets_done },
      'bulk import resumed',
    );
  }
  const run = state;
  const save = () => file.save(run);
  if (run.phase === 'spreading') await spread(run, options, save);
  if (run.phase === 'committing') await commit(run, options, save);
  if (run.finished_at === null) {
    run.finished_at = now().toISOString();
    await save();
  }
  options.progress?.finish(run);
  return { state: run, alreadyDone: false };
}

const countIn = (counts: Record<string, number>, key: string, by = 1) => {
  counts[key] = (counts[key] ?? 0) + by;
};

async function spread(
  state: ImportState,
  options: BulkImportOptions,
  save: () => Promise<void>,
): Promise<void> {
  const { source, progress } = options;
  if (state.files === null) {
    const listed = await source.list(state, save);
    state.files = listed.files;
    state.buckets = new Array<number>(bucketCountFor(listed.estimatedBytes)).fill(0);
    await save();
  }
  const files = state.files;
  const every = options.checkpointLines ?? 10_000;
  const spill = await SpillBuckets.open(
    options.state.folder,
    options.state.spillKey(state),
    state.buckets,
  );
  const summary = state.summary;
  try {
    for (const [index, entry] of files.entries()) {
      if (entry.done) continue;
      const name = basename(entry.location);
      const stream = await source.open(entry, state);
      let sinceCheckpoint = 0;
      const checkpoint = async (line: number) => {
        state.buckets = await spill.flush();
        entry.lines_done = line;
        await save();
        sinceCheckpoint = 0;
        progress?.spreading(state);
      };
      let last = entry.lines_done;
      for await (const line of ndjsonLines(stream, { skip: entry.lines_done, name })) {
        last = line.number;
        const spilled = spillable(line.text, line.number, index, name, summary);
        if (spilled !== undefined) await spill.add(spilled);
        if (++sinceCheckpoint >= every) await checkpoint(line.number);
      }
      entry.done = true;
      await checkpoint(Math.max(last, entry.lines_done));
    }
  } finally {
    spill.close();
  }
  await source.finished?.(state);
  state.phase = 'committing';
  await save();
}

/** What the first phase does with one line: counted, and spilled when it is a patient's. */
function spillable(
  text: string,
  line: number,
  fileIndex: number,
  fileName: string,
  summary: ImportSummary,
): SpilledResource | undefined {
  let resource: unknown;
  try {
    resource = JSON.parse(text);
  } catch {
    noteError(summary, { file: fileName, line, code: 'ERR_IMPORT_LINE', message: 'not JSON' });
    return undefined;
  }
  const type =
    typeof resource === 'object' && resource !== null && !Array.isArray(resource)
      ? (resource as Record<string, unknown>)['resourceType']
      : undefined;
  if (typeof type !== 'string') {
    noteError(summary, {
      file: fileName,
      line,
      code: 'ERR_IMPORT_LINE',
      message: 'not a FHIR resource (no resourceType)',
    });
    return undefined;
  }
  countIn(summary.resources, type);
  if (!MAPPED_TYPES.has(type)) {
    countIn(summary.ignored_resources, type);
    return undefined;
  }
  const patient = patientIdOf(resource as Record<string, unknown>);
  if (patient === undefined) {
    summary.without_patient++;
    return undefined;
  }
  return { p: patient, f: fileIndex, l: line, r: text };
}

/** An error of one patient's resources (refused input), as opposed to one that stops the run. */
const isInputError = (err: unknown) =>
  err instanceof IngestHttpError && err.statusCode >= 400 && err.statusCode < 500;

async function commit(
  state: ImportState,
  options: BulkImportOptions,
  save: () => Promise<void>,
): Promise<void> {
  const key = options.state.spillKey(state);
  const files = state.files ?? [];
  for (let bucket = state.buckets_done; bucket < state.buckets.length; bucket++) {
    const unmappedBefore = (await options.unmapped?.()) ?? 0;
    const byPatient = new Map<string, SpilledResource[]>();
    for (const resource of await SpillBuckets.read(options.state.folder, key, bucket)) {
      const list = byPatient.get(resource.p);
      if (list === undefined) byPatient.set(resource.p, [resource]);
      else list.push(resource);
    }
    // This bucket's counts join the summary only once it is done: a bucket cut short is
    // committed again, and must not count twice.
    const counted = emptySummary();
    const patients = [...byPatient.values()];
    let next = 0;
    const lane = async () => {
      for (
        let resources = patients[next++];
        resources !== undefined;
        resources = patients[next++]
      ) {
        await options.pacer?.ready();
        await commitPatient(state, resources, files, options, counted);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, lane));
    counted.unmapped_problems = ((await options.unmapped?.()) ?? 0) - unmappedBefore;
    addBucketCounts(state.summary, counted);
    state.buckets_done = bucket + 1;
    await save();
    options.progress?.committing(state);
  }
  state.phase = 'done';
  await save();
}

async function commitPatient(
  state: ImportState,
  resources: readonly SpilledResource[],
  files: readonly ImportFile[],
  options: BulkImportOptions,
  counted: ImportSummary,
): Promise<void> {
  try {
    const bundle = {
      resourceType: 'Bundle',
      id: `bulk-${state.run_id}`,
      type: 'collection',
      entry: resources.map((r) => ({ resource: JSON.parse(r.r) as unknown })),
    };
    const applied = await options.bundles.applyBundle(bundle, options.mode);
    const queued = applied.patients.reduce((n, p) => n + (p.queued ?? 0), 0);
    options.pacer?.opened(queued);
    counted.patients++;
    if (applied.patients.some((p) => p.changed)) counted.patients_changed++;
    counted.queries_opened += queued;
  } catch (err) {
    options.pacer?.opened(0);
    if (!isInputError(err) || !isConcordanceError(err)) throw err;
    const first = resources[0];
    const file = basename(files[first?.f ?? -1]?.location ?? '?');
    noteError(counted, { file, line: first?.l ?? 0, code: err.code, message: err.message });
  }
}
