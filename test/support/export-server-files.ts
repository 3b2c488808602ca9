import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** One NDJSON file of the served folder and the resource type it holds. */
export interface NdjsonFile {
  /** The file's name in the folder (`Patient.ndjson`, `12.Observation.ndjson`). */
  name: string;
  type: string;
  path: string;
}

/** What an export keeps of the folder's resources (`_type`, `_since`, a Group's members). */
export interface ExportFilter {
  /** Resource types asked for; undefined: all. */
  types?: ReadonlySet<string> | undefined;
  /** `_since` in ms: resources whose `meta.lastUpdated` is not after it are left out. */
  sinceMs?: number | undefined;
  /** Patient ids of the Group: resources about other patients are left out. */
  patients?: ReadonlySet<string> | undefined;
}

/**
 * The `*.ndjson` files of `folder`, in name order. The type is the name's last part before
 * `.ndjson`, so both `Patient.ndjson` and a reference export's `16.Patient.ndjson` are served.
 */
export async function ndjsonFiles(folder: string): Promise<NdjsonFile[]> {
  const names = (await readdir(folder)).filter((n) => n.endsWith('.ndjson')).sort();
  return names.map((name) => ({
    name,
    type: name.slice(0, -'.ndjson'.length).split('.').at(-1) ?? name,
    path: join(folder, name),
  }));
}

function patientOf(resource: {
  resourceType?: unknown;
  id?: unknown;
  subject?: { reference?: unknown };
  patient?: { reference?: unknown };
}): string | undefined {
  if (resource.resourceType === 'Patient')
    return typeof resource.id === 'string' ? resource.id : '';
  const reference = resource.subject?.reference ?? resource.patient?.reference;
  return typeof reference === 'string' && reference.startsWith('Patient/')
    ? reference.slice('Patient/'.length)
    : undefined;
}

/** True when the export keeps this NDJSON line. A resource without `meta.lastUpdated` passes `_since`. */
export function keeps(line: string, filter: ExportFilter): boolean {
  if (filter.sinceMs === undefined && filter.patients === undefined) return true;
  const resource = JSON.parse(line) as Parameters<typeof patientOf>[0] & {
    meta?: { lastUpdated?: unknown } | null;
  };
  const updated = resource.meta?.lastUpdated;
  if (filter.sinceMs !== undefined && typeof updated === 'string') {
    if (Date.parse(updated) <= filter.sinceMs) return false;
  }
  if (filter.patients !== undefined) {
    const patient = patientOf(resource);
    if (patient !== undefined && !filter.patients.has(patient)) return false;
  }
  return true;
}

/** The non-empty lines of `file` the export keeps, read as a stream. */
export async function* keptLines(file: NdjsonFile, filter: ExportFilter): AsyncGenerator<string> {
  const lines = createInterface({ input: createReadStream(file.path), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() !== '' && keeps(line, filter)) yield line;
  }
}

/** How many lines of `file` the export keeps. */
export async function countKept(file: NdjsonFile, filter: ExportFilter): Promise<number> {
  let count = 0;
  for await (const line of keptLines(file, filter)) if (line !== '') count++;
  return count;
}
