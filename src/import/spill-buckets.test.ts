import { randomBytes, createSecretKey } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketCountFor, bucketOf, SpillBuckets } from './spill-buckets.ts';

const key = createSecretKey(randomBytes(32));
let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'cw-spill-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('SpillBuckets', () => {
  it("gathers a patient's resources in one bucket, sealed, and reads them back", async () => {
    const spill = await SpillBuckets.open(folder, key, new Array(4).fill(0));
    const marker = 'PLANTED-MARKER-9f1c';
    await spill.add({
      p: 'pat-1',
      f: 0,
      l: 1,
      r: `{"resourceType":"Patient","id":"pat-1","name":"${marker}"}`,
    });
    await spill.add({ p: 'pat-1', f: 1, l: 7, r: '{"resourceType":"Condition"}' });
    await spill.add({ p: 'pat-2', f: 1, l: 8, r: '{"resourceType":"Condition"}' });
    const sizes = await spill.flush();
    spill.close();
    const bucket = bucketOf('pat-1', 4);
    const files = await Promise.all(
      (await readdir(folder)).map((name) => readFile(join(folder, name), 'utf8')),
    );
    expect(files.length).toBeGreaterThan(0);
    expect(files.join('')).not.toContain(marker);
    expect(files.join('')).not.toContain('pat-1');
    expect(sizes[bucket]).toBeGreaterThan(0);
    const read = await SpillBuckets.read(folder, key, bucket);
    expect(read.filter((r) => r.p === 'pat-1').map((r) => r.l)).toEqual([1, 7]);
  });

  it('cuts a bucket back to its checkpoint size on reopening', async () => {
    const first = await SpillBuckets.open(folder, key, [0]);
    await first.add({ p: 'a', f: 0, l: 1, r: '{}' });
    const checkpoint = await first.flush();
    await first.add({ p: 'a', f: 0, l: 2, r: '{}' });
    await first.flush();
    first.close();
    const again = await SpillBuckets.open(folder, key, checkpoint);
    again.close();
    expect((await SpillBuckets.read(folder, key, 0)).map((r) => r.l)).toEqual([1]);
  });

  it('refuses a bucket shorter than its checkpoint, and one sealed under another key', async () => {
    await expect(SpillBuckets.open(folder, key, [10])).rejects.toMatchObject({
      code: 'ERR_IMPORT_STATE',
    });
    const spill = await SpillBuckets.open(folder, key, [0]);
    await spill.add({ p: 'a', f: 0, l: 1, r: '{}' });
    await spill.flush();
    spill.close();
    await expect(
      SpillBuckets.read(folder, createSecretKey(randomBytes(32)), 0),
    ).rejects.toMatchObject({ code: 'ERR_IMPORT_STATE' });
  });

  it('sizes the bucket count by the input', () => {
    expect(bucketCountFor(0)).toBe(16);
    expect(bucketCountFor(1024 ** 3)).toBe(512);
    expect(bucketCountFor(1024 ** 5)).toBe(2048);
  });
});
