import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES, ndjsonLines } from './ndjson-lines.ts';

async function collect(chunks: (string | Buffer)[], skip = 0) {
  const lines = [];
  for await (const line of ndjsonLines(Readable.from(chunks), { skip })) lines.push(line);
  return lines;
}

describe('ndjsonLines', () => {
  it('splits across chunk boundaries, numbers lines and skips empty ones', async () => {
    const lines = await collect(['{"a":', '1}\n\n{"b"', ':2}\r\n', '{"c":3}']);
    expect(lines).toEqual([
      { text: '{"a":1}', number: 1 },
      { text: '{"b":2}', number: 3 },
      { text: '{"c":3}', number: 4 },
    ]);
  });

  it('keeps a character split between chunks whole', async () => {
    const bytes = Buffer.from('{"n":"é"}\n');
    const lines = await collect([bytes.subarray(0, 7), bytes.subarray(7)]);
    expect(lines).toEqual([{ text: '{"n":"é"}', number: 1 }]);
  });

  it('skips the lines of a resumed file, still counting them', async () => {
    const lines = await collect(['1\n2\n3\n4\n'], 2);
    expect(lines.map((l) => [l.text, l.number])).toEqual([
      ['3', 3],
      ['4', 4],
    ]);
  });

  it('refuses a line over the limit', async () => {
    const big = Buffer.alloc(MAX_LINE_BYTES + 1, 0x61);
    await expect(collect([big])).rejects.toMatchObject({ code: 'ERR_IMPORT_SOURCE' });
  });
});
