import { randomUUID } from 'node:crypto';
import { escapeValue, type Delimiters } from './er7.ts';

/**
 * HL7 v2 batches: `[FHS] {BHS {MSH…} BTS} [FTS]`, one frame (MLLP) or one body (HTTP). The
 * envelope is read on the raw bytes (its segments, like MSH, are ASCII in every supported character
 * set) and each message is cut out as bytes, so that each is decoded by its own MSH-18.
 */
export interface Hl7v2Batch {
  /** The FHS line (Latin-1 text), when the input had one. */
  fhs: string | undefined;
  /** The input's batches, in order; messages before any BHS form a batch without BHS. */
  batches: { bhs: string | undefined; messages: Buffer[] }[];
}

const CR = 0x0d;
const LF = 0x0a;
const ENVELOPE = new Set(['FHS', 'BHS', 'BTS', 'FTS']);

/** The non-empty lines of raw bytes (CR, LF or CRLF), a UTF-8 BOM dropped from the first. */
function lines(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= bytes.length; i += 1) {
    if (i === bytes.length || bytes[i] === CR || bytes[i] === LF) {
      let line = bytes.subarray(start, i);
      if (out.length === 0 && line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) {
        line = line.subarray(3);
      }
      if (line.length > 0) out.push(line);
      start = i + 1;
    }
  }
  return out;
}

const nameOf = (line: Buffer) => line.subarray(0, 3).toString('latin1');

/** True when the first non-empty line (a UTF-8 BOM dropped) starts with FHS or BHS. */
export function isBatch(bytes: Buffer): boolean {
  let start = 0;
  while (start < bytes.length && (bytes[start] === CR || bytes[start] === LF)) start += 1;
  let head = bytes.subarray(start, start + 6);
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) head = head.subarray(3);
  const name = head.subarray(0, 3).toString('latin1');
  return name === 'FHS' || name === 'BHS';
}

/**
 * Splits a batch into its messages (each from its MSH to the next MSH or envelope segment, joined
 * with CR). BTS-1 and FTS-1 counts are not checked: every message present is answered. Segments
 * outside any message other than the envelope's are ignored.
 */
export function splitBatch(bytes: Buffer): Hl7v2Batch {
  const result: Hl7v2Batch = { fhs: undefined, batches: [] };
  let batch: Hl7v2Batch['batches'][number] | undefined;
  let message: Buffer[] | undefined;
  const endMessage = () => {
    if (message !== undefined) {
      if (batch === undefined) {
        batch = { bhs: undefined, messages: [] };
        result.batches.push(batch);
      }
      batch.messages.push(Buffer.concat(message.flatMap((l) => [l, Buffer.of(CR)])));
    }
    message = undefined;
  };
  for (const line of lines(bytes)) {
    const name = nameOf(line);
    if (name === 'MSH') {
      endMessage();
      message = [line];
    } else if (ENVELOPE.has(name)) {
      endMessage();
      if (name === 'FHS' && result.fhs === undefined) result.fhs = line.toString('latin1');
      if (name === 'BHS') {
        batch = { bhs: line.toString('latin1'), messages: [] };
        result.batches.push(batch);
      }
      if (name === 'BTS') batch = undefined;
    } else if (message !== undefined) {
      message.push(line);
    }
  }
  endMessage();
  return result;
}

const STANDARD: Delimiters = {
  field: '|',
  component: '^',
  repetition: '~',
  escape: '\\',
  subcomponent: '&',
};

/** The delimiters of an FHS/BHS line, or the standard ones when they are unusable. */
function delimitersOf(header: string | undefined): Delimiters {
  if (header === undefined || header.length < 8) return STANDARD;
  const chars = [...header.slice(3, 8)];
  const usable =
    chars.every((c) => /^[\x21-\x7e]$/.test(c) && !/[A-Za-z0-9]/.test(c)) &&
    new Set(chars).size === 5;
  if (!usable) return STANDARD;
  const [field, component, repetition, escape, subcomponent] = chars as [
    string,
    string,
    string,
    string,
    string,
  ];
  return { field, component, repetition, escape, subcomponent };
}

function timestamp(now: Date): string {
  return `${now.toISOString().replace(/[-:T]/g, '').slice(0, 14)}+0000`;
}

/**
 * The answer header for an FHS or BHS: sending and receiving application/facility swapped, a new
 * control id (-11) and the original one as reference (-12). `fallback` gives the delimiters when
 * the header was absent.
 */
function answerHeader(
  name: 'FHS' | 'BHS',
  original: string | undefined,
  d: Delimiters,
  now: Date,
): string {
  const f = d.field;
  const fields = original === undefined ? [] : original.slice(4).split(f);
  // fields[0] is -2 (encoding characters): -n is fields[n - 2].
  const raw = (n: number) => fields[n - 2] ?? '';
  const encoding = `${d.component}${d.repetition}${d.escape}${d.subcomponent}`;
  return [
    `${name}${f}${encoding}`,
    raw(5),
    raw(6),
    raw(3),
    raw(4),
    timestamp(now),
    '',
    '',
    '',
    escapeValue(randomUUID().replaceAll('-', '').slice(0, 20), d),
    raw(11),
  ].join(f);
}

/**
 * One batch of ACKs for a batch: FHS (when the input had one), per input batch a BHS, its messages'
 * ACKs in order and BTS with their count, then FTS with the batch count. Segments end with CR.
 */
export function buildBatchAck(batch: Hl7v2Batch, acks: string[][], now = new Date()): string {
  const d = delimitersOf(batch.fhs ?? batch.batches[0]?.bhs);
  const f = d.field;
  const segments: string[] = [];
  if (batch.fhs !== undefined) segments.push(answerHeader('FHS', batch.fhs, d, now));
  const inputs = batch.batches.length === 0 ? [{ bhs: undefined, messages: [] }] : batch.batches;
  inputs.forEach((input, i) => {
    segments.push(answerHeader('BHS', input.bhs, d, now));
    const answers = acks[i] ?? [];
    for (const ack of answers) segments.push(ack.replace(/\r$/, ''));
    segments.push(`BTS${f}${answers.length}`);
  });
  if (batch.fhs !== undefined) segments.push(`FTS${f}${inputs.length}`);
  return `${segments.join('\r')}\r`;
}
