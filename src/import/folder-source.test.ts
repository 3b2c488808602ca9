import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderSource, typeOfFileName } from './folder-source.ts';
import { ndjsonLines } from './ndjson-lines.ts';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'cw-folder-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('FolderSource', () => {
  it('names files by the type in their name', () => {
    expect(typeOfFileName('Patient.ndjson')).toBe('Patient');
    expect(typeOfFileName('1.Condition.ndjson')).toBe('Condition');
    expect(typeOfFileName('Observation-2.ndjson.gz')).toBe('Observation');
    expect(typeOfFileName('export.ndjson')).toBe('mixed');
  });

  it('lists NDJSON files, Patient first, and reads gzipped ones', async () => {
    await writeFile(join(folder, 'Condition.ndjson'), '{"resourceType":"Condition"}\n');
    await writeFile(join(folder, 'Patient.ndjson.gz'), gzipSync('{"resourceType":"Patient"}\n'));
    await writeFile(join(folder, 'notes.txt'), 'not NDJSON');
    const source = await FolderSource.of(folder);
    const { files } = await source.list();
    expect(files.map((f) => f.type)).toEqual(['Patient', 'Condition']);
    const first = files.at(0);
    if (first === undefined) throw new Error('no file listed');
    const lines = [];
    for await (const line of ndjsonLines(await source.open(first))) lines.push(line.text);
    expect(lines).toEqual(['{"resourceType":"Patient"}']);
  });

  it('refuses a folder without NDJSON, and one that does not exist', async () => {
    await expect((await FolderSource.of(folder)).list()).rejects.toMatchObject({
      code: 'ERR_IMPORT_SOURCE',
    });
    await expect(FolderSource.of(join(folder, 'missing'))).rejects.toMatchObject({
      code: 'ERR_IMPORT_SOURCE',
    });
  });
});
