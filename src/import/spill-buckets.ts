import { appendFile, readFile, stat, truncate } from 'node:fs/promises';
import type { KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { aesGcmOpen, aesGcmSeal } from '../identity/aes-gcm.ts';
import { ImportStateError } from './import-errors.ts';

/** One resource as it waits in its bucket: its patient, where it came from, the line itself. */
export interface SpilledResource {
  /** The Patient's logical id on the exporting server. */
  p: string;
  /** The index of its file in the run's file list, and its line there. */
  f: number;
  l: number;
  /** The NDJSON line as read. */
  r: string;
}

/** Bytes kept per bucket before they are written: K buckets hold at most K × this in memory. */
const BUFFERED_BYTES = 32 * 1024;

/** FNV-1a (32-bit) of the patient id: the bucket a patient's resources all go to. */
export function bucketOf(patientId: string, buckets: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < patientId.length; i++) {
    hash ^= patientId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % buckets;
}

const fileOf = (folder: string, bucket: number) =>
  join(folder, `bucket-${String(bucket).padStart(4, '0')}.sealed`);
const aadOf = (bucket: number) => Buffer.from(`import-bucket:${bucket}`);

/**
 * The first phase's spill: every resource goes to the bucket of its patient, sealed (AES-256-GCM
 * under the run's key, associated data = the bucket), one base64 line each. So a patient's
 * resources, spread over one file per type, meet in one bucket that the second phase reads whole,
 * with memory bounded by the bucket's size rather than the export's. Nothing is on disk in plain
 * text. Writes are buffered per bucket; {@link flush} writes them all and returns the buckets'
 * sizes, which a checkpoint records: a resumed run {@link SpillBuckets.open}s the buckets cut back
 * to those sizes, so that lines written after the checkpoint are not there twice.
 */
interface Bucket {
  path: string;
  /** Bytes written so far (the checkpoint's size once flushed). */
  size: number;
  lines: string[];
  buffered: number;
}

export class SpillBuckets {
  readonly #key: KeyObject;
  readonly #buckets: Bucket[];

  private constructor(key: KeyObject, buckets: Bucket[]) {
    this.#key = key;
    this.#buckets = buckets;
  }

  /**
   * The `sizes.length` buckets of `folder`, each cut back to its size. No file stays open: each
   * write appends to its file (opened and closed), so the number of buckets is not bounded by the
   * process's open files.
   */
  static async open(
    folder: string,
    key: KeyObject,
    sizes: readonly number[],
  ): Promise<SpillBuckets> {
    const buckets: Bucket[] = [];
    for (const [index, size] of sizes.entries()) {
      const path = fileOf(folder, index);
      const found = await stat(path).then(
        (s) => s.size,
        () => 0,
      );
      if (found < size) {
        throw new ImportStateError(
          `spill bucket ${index} holds ${found} bytes where the checkpoint recorded ${size}: the state folder was altered; start over with --restart`,
        );
      }
      if (found > size) await truncate(path, size);
      buckets.push({ path, size, lines: [], buffered: 0 });
    }
    return new SpillBuckets(key, buckets);
  }

  get count(): number {
    return this.#buckets.length;
  }

  /** Adds one resource to its patient's bucket (written once the bucket's buffer is full). */
  async add(resource: SpilledResource): Promise<void> {
    const index = bucketOf(resource.p, this.count);
    const bucket = this.#buckets[index];
    if (bucket === undefined) throw new ImportStateError('the spill has no buckets');
    const sealed = aesGcmSeal(this.#key, JSON.stringify(resource), aadOf(index));
    const line = `${sealed.toString('base64')}\n`;
    bucket.lines.push(line);
    bucket.buffered += line.length;
    if (bucket.buffered >= BUFFERED_BYTES) await SpillBuckets.#write(bucket);
  }

  static async #write(bucket: Bucket): Promise<void> {
    if (bucket.lines.length === 0) return;
    const bytes = Buffer.from(bucket.lines.join(''));
    bucket.lines = [];
    bucket.buffered = 0;
    await appendFile(bucket.path, bytes, { mode: 0o600 });
    bucket.size += bytes.length;
  }

  /** Writes every buffered line; the buckets' sizes after it (what a checkpoint records). */
  async flush(): Promise<number[]> {
    for (const bucket of this.#buckets) await SpillBuckets.#write(bucket);
    return this.#buckets.map((b) => b.size);
  }

  /** Drops what was not flushed (a run that stops: the checkpoint holds what counts). */
  close(): void {
    for (const bucket of this.#buckets) {
      bucket.lines = [];
      bucket.buffered = 0;
    }
  }

  /** The resources of one bucket, opened (the second phase; the file is read whole). */
  static async read(folder: string, key: KeyObject, bucket: number): Promise<SpilledResource[]> {
    const path = fileOf(folder, bucket);
    const exists = await stat(path).then(
      () => true,
      () => false,
    );
    if (!exists) return [];
    const text = await readFile(path, 'utf8');
    const resources: SpilledResource[] = [];
    for (const line of text.split('\n')) {
      if (line.length === 0) continue;
      let opened: Buffer;
      try {
        opened = aesGcmOpen(key, Buffer.from(line, 'base64'), aadOf(bucket));
      } catch (err) {
        throw new ImportStateError(
          `spill bucket ${bucket} does not open under this run's key: the state folder was altered or CROSSWALK_KEY changed; start over with --restart`,
          { cause: err },
        );
      }
      resources.push(JSON.parse(opened.toString('utf8')) as SpilledResource);
    }
    return resources;
  }
}

/**
 * How many buckets a run spreads its resources over: about one per 2 MiB of input (what the second
 * phase holds at once: about twice that once sealed and opened), at least 16, at most 2,048 (each
 * buffers up to 32 KiB while the first phase runs: 64 MiB at most).
 */
export function bucketCountFor(estimatedBytes: number): number {
  return Math.min(2048, Math.max(16, Math.ceil(estimatedBytes / (2 * 1024 * 1024))));
}
