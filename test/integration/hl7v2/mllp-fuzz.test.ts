import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fixture,
  fixtureNames,
  frame,
  MllpClient,
  startHl7v2Harness,
  withCr,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

const VT = 0x0b;
const FS = 0x1c;
const CR = 0x0d;

/**
 * The complete frames an MLLP receiver sees in `stream` (the test's own oracle): outside a frame
 * every byte but VT is ignored; inside, the frame ends at the first FS CR. An FS or VT embedded in
 * a message is content, unless it forms FS CR, which ends the frame early.
 */
function completeFrames(stream: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  let start = -1;
  for (let i = 0; i < stream.length; i += 1) {
    if (start === -1) {
      if (stream[i] === VT) start = i + 1;
    } else if (stream[i] === FS && stream[i + 1] === CR) {
      frames.push(stream.subarray(start, i));
      start = -1;
      i += 1;
    }
  }
  return frames;
}

/** The answer a frame must get (the test's own reading of HL7 v2, not the server's code). */
interface Expected {
  /** A batch (first non-empty line FHS or BHS) is answered with one batch of ACKs. */
  batch: boolean;
  /** MSA segments the answer holds: one per message (one for a single message). */
  minMsa: number;
  maxMsa: number;
  /** An inbound ACK (MSH-9 = ACK) by design gets no answer: 0 or 1 answers then. */
  optional: boolean;
}

function expectedOf(frameBytes: Buffer): Expected {
  const lines = frameBytes
    .toString('latin1')
    .split(/\r|\n/)
    .filter((l) => l !== '');
  const first = (lines[0] ?? '').replace(/^\u00ef\u00bb\u00bf/, '');
  const isAck = (line: string) => {
    if (!line.startsWith('MSH') || line.length < 8) return false;
    const type = line.split(line.charAt(3))[8] ?? '';
    return type.split(line.charAt(4))[0] === 'ACK';
  };
  if (first.startsWith('FHS') || first.startsWith('BHS')) {
    const messages = lines.filter((l) => l.startsWith('MSH'));
    const acks = messages.filter(isAck).length;
    return {
      batch: true,
      minMsa: messages.length - acks,
      maxMsa: messages.length,
      optional: false,
    };
  }
  return { batch: false, minMsa: 1, maxMsa: 1, optional: isAck(first) };
}

const fixtures = fixtureNames().flatMap((name) => {
  const text = fixture(name);
  return [Buffer.from(text, 'utf8'), Buffer.from(withCr(text), 'utf8')];
});

type Mutation =
  | { kind: 'charset'; value: Buffer }
  | { kind: 'flip'; at: number; byte: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'shuffle'; seed: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array };

/** MSH-18 values: supported, unsupported, empty, and arbitrary bytes. */
const charsetValue: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .constantFrom(
      '8859/1',
      '8859/2',
      '8859/15',
      'UNICODE UTF-8',
      'ASCII',
      'windows-1252',
      'UNICODE UTF-16',
      'EBCDIC',
      '',
      '8859/1~UNICODE UTF-8',
    )
    .map((name) => Buffer.from(name, 'latin1')),
  fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)),
);

/** Sets MSH-18 of the first MSH line (the fields before it padded as needed). */
function withCharset(input: Buffer, value: Buffer): Buffer {
  const text = input.toString('latin1');
  const lineStart = text.search(/MSH/);
  if (lineStart === -1 || text.length < lineStart + 8) return input;
  const end = text.slice(lineStart).search(/\r|\n/);
  const lineEnd = end === -1 ? text.length : lineStart + end;
  const line = text.slice(lineStart, lineEnd);
  const fields = line.split(line.charAt(3));
  while (fields.length < 18) fields.push('');
  fields[17] = value.toString('latin1');
  const changed = `${text.slice(0, lineStart)}${fields.join(line.charAt(3))}${text.slice(lineEnd)}`;
  return Buffer.from(changed, 'latin1');
}

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('charset'), value: charsetValue }),
  fc.record({ kind: fc.constant('flip'), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('truncate'), at: fc.nat() }),
  fc.record({ kind: fc.constant('shuffle'), seed: fc.nat() }),
  fc.record({
    kind: fc.constant('insert'),
    at: fc.nat(),
    bytes: fc.oneof(
      fc.constantFrom(
        Uint8Array.of(FS),
        Uint8Array.of(VT),
        Uint8Array.of(FS, CR),
        Uint8Array.of(VT, VT),
      ),
      fc.uint8Array({ minLength: 1, maxLength: 64 }),
    ),
  }),
) as fc.Arbitrary<Mutation>;

function mutate(input: Buffer, m: Mutation): Buffer {
  if (input.length === 0) return input;
  if (m.kind === 'charset') return withCharset(input, m.value);
  const at = m.kind === 'shuffle' ? 0 : m.at % input.length;
  switch (m.kind) {
    case 'flip': {
      const out = Buffer.from(input);
      out[at] = m.byte;
      return out;
    }
    case 'truncate':
      return input.subarray(0, at);
    case 'insert':
      return Buffer.concat([input.subarray(0, at), m.bytes, input.subarray(at)]);
    case 'shuffle': {
      const lines = input.toString('latin1').split(/\r|\n/);
      // Deterministic Fisher-Yates from the seed.
      let s = m.seed || 1;
      for (let i = lines.length - 1; i > 0; i -= 1) {
        s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
        const j = s % (i + 1);
        [lines[i], lines[j]] = [lines[j] ?? '', lines[i] ?? ''];
      }
      return Buffer.from(lines.join('\r'), 'latin1');
    }
  }
}

const message: fc.Arbitrary<Buffer> = fc
  .tuple(fc.constantFrom(...fixtures), fc.array(mutation, { maxLength: 4 }))
  .map(([base, ms]) => ms.reduce(mutate, base));

/** Latin-1 letters in a message: valid in 8859/1 and windows-1252, invalid as UTF-8 or ASCII. */
const latin1Message: fc.Arbitrary<Buffer> = fc
  .tuple(fc.constantFrom(...fixtures), charsetValue)
  .map(([base, charset]) =>
    withCharset(
      Buffer.from(base.toString('utf8').replace(/\|([A-Z]{2,})\^/, '|$1\u00dc^'), 'latin1'),
      charset,
    ),
  );

type EnvelopeSegment = 'FHS' | 'BHS' | 'BTS' | 'FTS';

/** A batch: an envelope (segments kept, dropped, doubled or garbled) around 0-4 messages. */
const batchPayload: fc.Arbitrary<Buffer> = fc
  .record({
    messages: fc.array(fc.oneof(message, latin1Message), { maxLength: 4 }),
    fhs: fc.boolean(),
    bhs: fc.boolean(),
    bts: fc.constantFrom<'count' | 'wrong' | 'none'>('count', 'wrong', 'none'),
    fts: fc.boolean(),
    extra: fc.array(
      fc.record({
        segment: fc.constantFrom<EnvelopeSegment>('FHS', 'BHS', 'BTS', 'FTS'),
        at: fc.nat(),
      }),
      { maxLength: 2 },
    ),
    separator: fc.constantFrom('\r', '\n', '\r\n'),
    after: fc.array(mutation, { maxLength: 2 }),
  })
  .map((b) => {
    const parts: Buffer[] = [];
    const line = (text: string) => Buffer.from(text, 'latin1');
    if (b.fhs) parts.push(line('FHS|^~\\&|F|F|R|R|20260101||||FILE-1'));
    if (b.bhs || !b.fhs) parts.push(line('BHS|^~\\&|F|F|R|R|20260101||||BATCH-1'));
    for (const m of b.messages) parts.push(m);
    if (b.bts !== 'none')
      parts.push(line(`BTS|${b.bts === 'count' ? b.messages.length : b.messages.length + 7}`));
    if (b.fts) parts.push(line('FTS|1'));
    for (const e of b.extra) {
      parts.splice(e.at % (parts.length + 1), 0, line(`${e.segment}|^~\\&|X`));
    }
    // Keep the first segment an FHS or BHS, so that this stays a batch before the mutations.
    const body = Buffer.concat(parts.flatMap((p) => [p, line(b.separator)]));
    return b.after.reduce(mutate, body);
  });

const payload: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 5, arbitrary: message },
  { weight: 1, arbitrary: latin1Message },
  { weight: 1, arbitrary: batchPayload },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2_048 }).map((b) => Buffer.from(b)) },
  {
    weight: 1,
    arbitrary: fc
      .uint8Array({ maxLength: 512 })
      .map((b) =>
        Buffer.concat([Buffer.from('MSH|^~\\&|F|F|R|R|20260101||ADT^A08|X1|P|2.5\r'), b]),
      ),
  },
);

const RUNS = 500;
const PER_RUN = 20;

/** The heap after a full collection (`gc` exposed at run time: vitest's workers start without it). */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('MLLP fuzz', () => {
  let h: Hl7v2Harness;
  beforeAll(async () => {
    h = await startHl7v2Harness();
  });
  afterAll(async () => {
    await h.close();
  });

  const sendBatch = async (payloads: Buffer[]) => {
    const stream = Buffer.concat(payloads.map((p) => frame(p)));
    const expected = completeFrames(stream).map(expectedOf);
    const client = await MllpClient.open(h.mllp.port);
    client.write(stream);
    client.socket.end();
    await client.closedPromise;
    return { expected, acks: client.acks };
  };

  /** One answer per frame (none or one for an inbound ACK), in order, each of the right shape. */
  const checkAnswers = (expected: Expected[], acks: string[]) => {
    const required = expected.filter((e) => !e.optional).length;
    expect(acks.length).toBeGreaterThanOrEqual(required);
    expect(acks.length).toBeLessThanOrEqual(expected.length);
    const msaCount = (ack: string) => ack.split('\r').filter((l) => l.startsWith('MSA|')).length;
    for (const ack of acks) {
      // A message's ACK, or a batch of them (an empty batch's holds no MSA).
      if (/^(FHS|BHS)\|/.test(ack)) expect(ack).toMatch(/\rBTS\|\d+\r/);
      else expect(ack).toMatch(/\rMSA\|A[AER]\|/);
      for (const line of ack.split('\r').filter((l) => l.startsWith('MSA|'))) {
        expect(line).toMatch(/^MSA\|A[AER]\|/);
      }
    }
    // Without optional frames the answers line up with the frames one to one.
    if (required === expected.length) {
      expected.forEach((e, i) => {
        const ack = acks[i] ?? '';
        expect(/^(FHS|BHS)\|/.test(ack)).toBe(e.batch);
        expect(msaCount(ack)).toBeGreaterThanOrEqual(e.minMsa);
        expect(msaCount(ack)).toBeLessThanOrEqual(e.maxMsa);
      });
    }
  };

  it(`answers ${RUNS * PER_RUN} random and mutated messages once per frame, without leaking`, async () => {
    // Warm-up (JIT, pools, Redis scripts), then the baseline.
    for (const payloads of fc.sample(
      fc.array(payload, { minLength: PER_RUN, maxLength: PER_RUN }),
      {
        numRuns: 20,
        seed: 7,
      },
    )) {
      await sendBatch(payloads);
    }
    const before = heapAfterGc();

    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(payload, { minLength: PER_RUN, maxLength: PER_RUN }),
        async (payloads) => {
          sent += payloads.length;
          const { expected, acks } = await sendBatch(payloads);
          checkAnswers(expected, acks);
        },
      ),
      { numRuns: RUNS, seed: 20_260_101 },
    );
    expect(sent).toBeGreaterThanOrEqual(RUNS * PER_RUN);
    // The fuzz reached every path: stored, ignored and refused messages.
    const counts =
      (await h.registry.getSingleMetric('cw_hl7v2_messages_total')?.get())?.values ?? [];
    const total = (outcome: string) =>
      counts.filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
    for (const outcome of ['accepted', 'ignored', 'rejected'])
      expect(total(outcome)).toBeGreaterThan(100);
    // …and batches were among them.
    const batches = h.logs.lines.filter((l) => l.includes('"msg":"hl7v2 batch acknowledged"'));
    expect(batches.length).toBeGreaterThan(100);

    // Every connection is gone and nothing stays buffered; the heap did not grow with the traffic.
    await h.mllp.close();
    expect(h.mllp.stats()).toEqual({ connections: 0, bufferedBytes: 0 });
    const after = heapAfterGc();
    expect(after - before).toBeLessThan(32 * 1024 * 1024);
  }, 120_000);
});
