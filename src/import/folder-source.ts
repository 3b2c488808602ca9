import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { ImportSource } from './bulk-import.ts';
import { ImportSourceError } from './import-errors.ts';
import type { ImportFile } from './import-state.ts';

const NDJSON = /\.ndjson(\.gz)?$/i;

/** The resource type a Bulk Data file is named for (`Patient.ndjson`, `1.Condition.ndjson`, …). */
export function typeOfFileName(name: string): string {
  const match = /(?:^|[._-])([A-Z][A-Za-z]+)(?:[._-]\d+)?\.ndjson(?:\.gz)?$/.exec(name);
  return match?.[1] ?? 'mixed';
}

/** Patients' own files first (nothing depends on it; the progress reads better), then by name. */
const byTypeThenName = (a: ImportFile, b: ImportFile) =>
  Number(b.type === 'Patient') - Number(a.type === 'Patient') ||
  a.location.localeCompare(b.location);

/**
 * A folder of NDJSON files that somebody else exported (`*.ndjson`, or gzipped `*.ndjson.gz`),
 * one resource per line; each line names its own type, so files may hold several.
 */
export class FolderSource implements ImportSource {
  readonly identity: string;
  readonly #folder: string;

  private constructor(folder: string) {
    this.#folder = folder;
    this.identity = `folder:${folder}`;
  }

  static async of(folder: string): Promise<FolderSource> {
    try {
      return new FolderSource(await realpath(folder));
    } catch (err) {
      throw new ImportSourceError(`${folder} cannot be read: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  async list(): Promise<{ files: ImportFile[]; estimatedBytes: number }> {
    const names = (await readdir(this.#folder)).filter((name) => NDJSON.test(name));
    if (names.length === 0) {
      throw new ImportSourceError(`${this.#folder} holds no .ndjson or .ndjson.gz file`);
    }
    let estimatedBytes = 0;
    const files: ImportFile[] = [];
    for (const name of names) {
      const location = join(this.#folder, name);
      const { size } = await stat(location);
      estimatedBytes += name.endsWith('.gz') ? size * 8 : size;
      files.push({ type: typeOfFileName(name), location, count: null, lines_done: 0, done: false });
    }
    return { files: files.sort(byTypeThenName), estimatedBytes };
  }

  async open(file: ImportFile): Promise<Readable> {
    const stream = createReadStream(file.location);
    return file.location.toLowerCase().endsWith('.gz') ? stream.pipe(createGunzip()) : stream;
  }
}
