import { once } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHl7v2Harness, TOKEN, type Hl7v2Harness } from './support/hl7v2-harness.ts';

/**
 * What other engines send (issue 20), byte for byte: a blank line before MSH, three or five
 * encoding characters in MSH-2, python-hl7's `mllp_send` stream, a Latin-1 message. Each frame gets
 * exactly one ACK whose MSA-1 and MSA-2 are checked, over MLLP and over `POST /v1/hl7v2`; every ACK
 * names its character set in MSH-18.
 */

const VT = 0x0b;
const FS = 0x1c;
const CR = 0x0d;

let h: Hl7v2Harness;
let httpUrl: string;

beforeAll(async () => {
  h = await startHl7v2Harness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  httpUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1/hl7v2`;
});

afterAll(async () => {
  await h.close();
});

/** An ADT^A08 (CR separators) for one patient, with MSH-2, MSH-18 and PID-3 as given. */
function adt(o: { controlId: string; id: string; msh2?: string; charset?: string }): string {
  const msh18 = o.charset === undefined ? '' : `||||||${o.charset}`;
  return [
    `MSH|${o.msh2 ?? '^~\\&'}|LAB|HOSP|CW|HOSP|20261123080000||ADT^A08^ADT_A01|${o.controlId}|P|2.5.1${msh18}`,
    'EVN|A08|20261123080000',
    `PID|1||${o.id}^^^^MR||DOE^JANE||19620314|F`,
    'DG1|1||I10^Essential (primary) hypertension^I10||20250101|F',
    '',
  ].join('\r');
}

const bytes = (text: string) => Buffer.from(text, 'latin1');
const framed = (body: Buffer) => Buffer.concat([Buffer.of(VT), body, Buffer.of(FS, CR)]);

/**
 * Writes `stream` on a fresh MLLP connection, ends our side and collects every answer frame until
 * the server closes the connection (it answers what it received first): the raw ACK bodies.
 */
async function exchange(stream: Buffer): Promise<Buffer[]> {
  const socket = connect(h.mllp.port, '127.0.0.1');
  await once(socket, 'connect');
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  const closed = once(socket, 'close');
  socket.end(stream);
  await closed;
  const all = Buffer.concat(received);
  const frames: Buffer[] = [];
  let at = 0;
  for (;;) {
    const start = all.indexOf(VT, at);
    const end = all.indexOf(Buffer.of(FS, CR), start);
    if (start === -1 || end === -1) break;
    frames.push(all.subarray(start + 1, end));
    at = end + 2;
  }
  return frames;
}

/** The one ACK an MLLP frame gets (fails when there is none or more than one). */
async function mllpAck(body: Buffer): Promise<Buffer> {
  const acks = await exchange(framed(body));
  expect(acks).toHaveLength(1);
  return acks[0] ?? Buffer.alloc(0);
}

/** `POST /v1/hl7v2` over real HTTP: status and ACK bytes. */
async function httpAck(body: Buffer, contentType = 'text/plain') {
  const response = await fetch(httpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': contentType },
    body,
  });
  return { status: response.status, ack: Buffer.from(await response.arrayBuffer()) };
}

/** The fields of a segment of an ACK read in `encoding` (split on its own MSH-1). */
function field(ack: Buffer, segment: string, n: number, encoding: BufferEncoding = 'latin1') {
  const text = ack.toString(encoding);
  const separator = text.charAt(3);
  const line = text.split('\r').find((l) => l.startsWith(`${segment}${separator}`));
  // MSH-1 is the separator itself: MSH-n is at n - 1 after the split, other segments at n.
  const fields = line?.split(separator) ?? [];
  return fields[segment === 'MSH' ? n - 1 : n];
}

/** MSA-1, MSA-2 and MSH-18 of one ACK. */
const summary = (ack: Buffer) => ({
  code: field(ack, 'MSA', 1),
  controlId: field(ack, 'MSA', 2),
  charset: field(ack, 'MSH', 18),
});

/** A message with a blank line first and one unreadable segment (a `%%garbage` line). */
function blankFirstWithGarbage(prefix: string, controlId: string): Buffer {
  return bytes(
    prefix + adt({ controlId, id: `Q-${controlId}` }).replace('\rPID|', '\r%%garbage\rPID|'),
  );
}

describe('a blank line before MSH (case 1)', () => {
  for (const [name, prefix] of [
    ['CR', '\r'],
    ['CR LF', '\r\n'],
    ['LF, spaces, a tab and a stray VT', '\n  \t\x0b'],
  ] as const) {
    it(`${name} first and an unreadable segment: MLLP AE with MSA-2, the message untouched`, async () => {
      const controlId = `BL-${name.length}-M`;
      const ack = await mllpAck(blankFirstWithGarbage(prefix, controlId));
      expect(summary(ack)).toEqual({ code: 'AE', controlId, charset: 'UNICODE UTF-8' });
      // MSH, EVN, then the unreadable line: the blank line before MSH is no segment.
      expect(field(ack, 'ERR', 2)).toBe('SEG^3');
      expect(await h.crosswalk.find(`Q-${controlId}`)).toBeUndefined();
    });

    it(`${name} first and an unreadable segment: HTTP 200 AE with MSA-2`, async () => {
      const controlId = `BL-${name.length}-H`;
      const { status, ack } = await httpAck(blankFirstWithGarbage(prefix, controlId));
      expect(status).toBe(200);
      expect(summary(ack)).toEqual({ code: 'AE', controlId, charset: 'UNICODE UTF-8' });
    });
  }

  it('a blank line before a valid message: AA, and the patient is stored', async () => {
    const ack = await mllpAck(bytes(`\r\n${adt({ controlId: 'BL-OK', id: 'Q-BL-OK' })}`));
    expect(summary(ack)).toEqual({ code: 'AA', controlId: 'BL-OK', charset: 'UNICODE UTF-8' });
    expect(await h.crosswalk.find('Q-BL-OK')).toBeDefined();
  });
});

describe('a blank line before MSH and a byte invalid in the character set (case 2)', () => {
  // 0xDC (Ü in Latin-1) is not UTF-8, the listener default when MSH-18 is empty.
  const message = (controlId: string) =>
    Buffer.concat([Buffer.of(CR), bytes(adt({ controlId, id: `M\xdcLLER-${controlId}` }))]);

  it('MLLP: AE with MSA-2 and the character set reason (ERR at MSH-18), in Latin-1', async () => {
    const ack = await mllpAck(message('CS-M'));
    expect(summary(ack)).toEqual({ code: 'AE', controlId: 'CS-M', charset: '8859/1' });
    expect(field(ack, 'ERR', 2)).toBe('MSH^1^18');
    expect(field(ack, 'ERR', 3)).toBe('102^Data type error^HL70357');
    expect(field(ack, 'MSA', 3)).toContain('not valid in its character set');
  });

  it('HTTP: 200 AE with MSA-2 and the character set reason', async () => {
    const { status, ack } = await httpAck(message('CS-H'));
    expect(status).toBe(200);
    expect(summary(ack)).toEqual({ code: 'AE', controlId: 'CS-H', charset: 'UNICODE UTF-8' });
    expect(field(ack, 'ERR', 2)).toBe('MSH^1^18');
  });
});

describe('MSH-2 with three or five encoding characters (case 3)', () => {
  for (const [name, msh2] of [
    ['three, no subcomponent separator (^~\\)', '^~\\'],
    ["three as a JavaScript literal 'MSH|^~\\&|' sends them (^~&)", '^~&'],
    ['five, with the HL7 2.7 truncation character (^~\\&#)', '^~\\&#'],
  ] as const) {
    it(`${name}: AA over MLLP and HTTP, the ACK repeating MSH-2`, async () => {
      const id = `Q-${msh2.length}-${msh2.includes('\\') ? 'b' : 'a'}`;
      const viaMllp = await mllpAck(bytes(adt({ controlId: `${id}-M`, id, msh2 })));
      expect(summary(viaMllp)).toEqual({
        code: 'AA',
        controlId: `${id}-M`,
        charset: 'UNICODE UTF-8',
      });
      expect(viaMllp.toString('latin1').startsWith(`MSH|${msh2}|CW|HOSP|LAB|HOSP|`)).toBe(true);
      expect(await h.crosswalk.find(id)).toBeDefined();

      const viaHttp = await httpAck(bytes(adt({ controlId: `${id}-H`, id, msh2 })));
      expect(viaHttp.status).toBe(200);
      expect(summary(viaHttp.ack)).toEqual({
        code: 'AA',
        controlId: `${id}-H`,
        charset: 'UNICODE UTF-8',
      });
    });
  }

  it('unusable encoding characters (two, or one repeated): AR, MSA-2 still MSH-10', async () => {
    for (const [msh2, controlId] of [
      ['^~', 'E2-M'],
      ['^^\\&', 'E4-M'],
    ] as const) {
      const ack = await mllpAck(bytes(adt({ controlId, id: `Q-${controlId}`, msh2 })));
      expect(summary(ack)).toEqual({ code: 'AR', controlId, charset: 'UNICODE UTF-8' });
    }
    const { status, ack } = await httpAck(
      bytes(adt({ controlId: 'E2-H', id: 'Q-E2-H', msh2: '^~' })),
    );
    expect(status).toBe(200);
    expect(summary(ack)).toEqual({ code: 'AR', controlId: 'E2-H', charset: 'UNICODE UTF-8' });
  });

  it("python-hl7's mllp_send stream (VT LF VT before the second message): two AAs", async () => {
    // What `mllp_send -f` sends for a file of two framed messages with CR LF between them
    // (captured from python3-hl7 0.4.5): its reader keeps the LF and the next VT in the message.
    const first = adt({ controlId: 'PY-1', id: 'Q-PY-1' }).replace(/\r$/, '');
    const second = adt({ controlId: 'PY-2', id: 'Q-PY-2' }).replace(/\r$/, '');
    const stream = Buffer.concat([
      framed(bytes(first)),
      framed(Buffer.concat([Buffer.of(0x0a, VT), bytes(second)])),
    ]);
    const acks = await exchange(stream);
    expect(acks.map(summary)).toEqual([
      { code: 'AA', controlId: 'PY-1', charset: 'UNICODE UTF-8' },
      { code: 'AA', controlId: 'PY-2', charset: 'UNICODE UTF-8' },
    ]);
  });

  it('CR LF and other bytes between frames are ignored: one AA per frame', async () => {
    const stream = Buffer.concat([
      framed(bytes(adt({ controlId: 'GAP-1', id: 'Q-GAP-1' }))),
      Buffer.from('\r\n'),
      framed(bytes(adt({ controlId: 'GAP-2', id: 'Q-GAP-2' }))),
      Buffer.from('\r\n \t'),
      framed(bytes(adt({ controlId: 'GAP-3', id: 'Q-GAP-3' }))),
      Buffer.from('\r\n'),
    ]);
    const acks = await exchange(stream);
    expect(acks.map((a) => [field(a, 'MSA', 1), field(a, 'MSA', 2)])).toEqual([
      ['AA', 'GAP-1'],
      ['AA', 'GAP-2'],
      ['AA', 'GAP-3'],
    ]);
  });
});

describe('every ACK names its character set in MSH-18 (case 4)', () => {
  // HÔPITAL: one Latin-1 byte (0xD4) in MSH-4, which the ACK echoes in MSH-6.
  const latin1 = (controlId: string) =>
    bytes(
      adt({ controlId, id: `L-${controlId}`, charset: '8859/1' }).replace(
        '|LAB|HOSP|',
        '|LAB|H\xd4PITAL|',
      ),
    );

  it('MLLP: a Latin-1 message gets a Latin-1 ACK with MSH-18 8859/1', async () => {
    const ack = await mllpAck(latin1('L1-M'));
    expect(summary(ack)).toEqual({ code: 'AA', controlId: 'L1-M', charset: '8859/1' });
    expect(field(ack, 'MSH', 6)).toBe('H\u00d4PITAL');
    expect(ack.includes(Buffer.of(0xd4))).toBe(true);
  });

  it('HTTP: the ACK of the same message is UTF-8 and says so', async () => {
    const { status, ack } = await httpAck(latin1('L1-H'));
    expect(status).toBe(200);
    expect(summary(ack)).toEqual({ code: 'AA', controlId: 'L1-H', charset: 'UNICODE UTF-8' });
    expect(field(ack, 'MSH', 6, 'utf8')).toBe('H\u00d4PITAL');
  });

  it('a refusal without a readable MSH says its character set too', async () => {
    const ack = await mllpAck(bytes('hello'));
    expect(summary(ack)).toEqual({ code: 'AR', controlId: '', charset: 'UNICODE UTF-8' });
  });
});
