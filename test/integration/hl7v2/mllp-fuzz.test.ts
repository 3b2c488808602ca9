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
 * How many complete frames an MLLP receiver sees in `stream` (the test's own oracle): outside a
 * frame every byte but VT is ignored; inside, the frame ends at the first FS CR. An FS or VT
 * embedded in a message is content, unless it forms FS CR, which ends the frame early.
 */
function completeFrames(stream: Buffer): number {
  let count = 0;
  let inFrame = false;
  for (let i = 0; i < stream.length; i += 1) {
    if (!inFrame) {
      if (stream[i] === VT) inFrame = true;
    } else if (stream[i] === FS && stream[i + 1] === CR) {
      count += 1;
      inFrame = false;
      i += 1;
    }
  }
  return count;
}

const fixtures = fixtureNames().flatMap((name) => {
  const text = fixture(name);
  return [Buffer.from(text, 'utf8'), Buffer.from(withCr(text), 'utf8')];
});

type Mutation =
  | { kind: 'flip'; at: number; byte: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'shuffle'; seed: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
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

const payload: fc.Arbitrary<Buffer> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.constantFrom(...fixtures), fc.array(mutation, { maxLength: 4 }))
      .map(([base, ms]) => ms.reduce(mutate, base)),
  },
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
    const expected = completeFrames(stream);
    const client = await MllpClient.open(h.mllp.port);
    client.write(stream);
    client.socket.end();
    await client.closedPromise;
    return { expected, acks: client.acks };
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
          expect(acks).toHaveLength(expected);
          for (const ack of acks) expect(ack).toMatch(/\rMSA\|A[AER]\|/);
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

    // Every connection is gone and nothing stays buffered; the heap did not grow with the traffic.
    await h.mllp.close();
    expect(h.mllp.stats()).toEqual({ connections: 0, bufferedBytes: 0 });
    const after = heapAfterGc();
    expect(after - before).toBeLessThan(32 * 1024 * 1024);
  }, 120_000);
});
