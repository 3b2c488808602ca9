import type { Readable } from 'node:stream';
import { ImportSourceError } from './import-errors.ts';

/** A line longer than this is refused: a resource is far smaller, and memory stays bounded. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** One non-empty line of an NDJSON file, with its 1-based number in the file. */
export interface NdjsonLine {
  text: string;
  number: number;
}

/**
 * The lines of an NDJSON stream, read as they arrive: the stream is pulled one chunk at a time
 * (`for await`), so a consumer that awaits its work applies backpressure down to the socket or
 * file. Lines up to `skip` are read but not yielded (a resumed file); empty lines are counted but
 * not yielded. A line over {@link MAX_LINE_BYTES} is refused with `ERR_IMPORT_SOURCE`.
 */
export async function* ndjsonLines(
  stream: Readable,
  { skip = 0, name = 'the file' }: { skip?: number; name?: string } = {},
): AsyncGenerator<NdjsonLine> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let number = 0;
  const emit = (bytes: Buffer): NdjsonLine | undefined => {
    number++;
    if (number <= skip) return undefined;
    const text = bytes.toString('utf8').trim();
    return text.length === 0 ? undefined : { text, number };
  };
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    let buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let at = buffer.indexOf(0x0a);
    while (at !== -1) {
      const head = buffer.subarray(0, at);
      const whole = pending.length === 0 ? head : Buffer.concat([...pending, head]);
      pending = [];
      pendingBytes = 0;
      const line = emit(whole);
      if (line !== undefined) yield line;
      buffer = buffer.subarray(at + 1);
      at = buffer.indexOf(0x0a);
    }
    if (buffer.length > 0) {
      pendingBytes += buffer.length;
      if (pendingBytes > MAX_LINE_BYTES) {
        throw new ImportSourceError(
          `line ${number + 1} of ${name} is longer than ${MAX_LINE_BYTES} bytes: not NDJSON`,
        );
      }
      pending.push(Buffer.from(buffer));
    }
  }
  if (pendingBytes > 0) {
    const line = emit(Buffer.concat(pending));
    if (line !== undefined) yield line;
  }
}
