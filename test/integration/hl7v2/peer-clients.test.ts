import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hl7Message } from '@medplum/core';
import { Hl7Client, type Hl7ErrorEvent } from '@medplum/hl7';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startHl7v2Harness, type Hl7v2Harness } from './support/hl7v2-harness.ts';

/**
 * The wire edge cases of "What other engines send (HL7 v2)" (docs/clinical-feeds.md), sent by the
 * real client libraries instead of hand-made bytes: Debian's python3-hl7 (its MLLP client, as
 * `mllp_send -f` uses it) and npm's `@medplum/hl7` (`Hl7Client.sendAndWait`), against our real MLLP
 * server. sender-quirks.test.ts has the same cases byte for byte.
 */

/** Debian's python3-hl7 is installed for the system Python (a pyenv `python3` on PATH lacks it). */
const PYTHON = '/usr/bin/python3';
const PYTHON_SENDER = fileURLToPath(new URL('peers/python_hl7_send.py', import.meta.url));
const INSTALL_PYTHON_HL7 =
  'apt-get install -y --no-install-recommends python3-hl7 (as .ci/run does when it is missing)';

let h: Hl7v2Harness;

beforeAll(async () => {
  h = await startHl7v2Harness();
});

afterAll(async () => {
  await h.close();
});

/** An ADT^A08 (CR separators, no trailing CR) with MSH-2, MSH-4, MSH-18 and PID-5 as given. */
function adt(o: {
  controlId: string;
  id: string;
  msh2?: string;
  facility?: string;
  charset?: string;
  name?: string;
}): string {
  const msh18 = o.charset === undefined ? '' : `||||||${o.charset}`;
  return [
    `MSH|${o.msh2 ?? '^~\\&'}|LAB|${o.facility ?? 'HOSP'}|CW|HOSP|20261123080000||ADT^A08^ADT_A01|${o.controlId}|P|2.5.1${msh18}`,
    'EVN|A08|20261123080000',
    `PID|1||${o.id}^^^^MR||${o.name ?? 'DOE^JANE'}||19620314|F`,
    'DG1|1||I10^Essential (primary) hypertension^I10||20250101|F',
  ].join('\r');
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr: stderr || (error?.message ?? '') });
    });
  });
}

/** Fails (never skips) with how to install it when the system Python has no python-hl7. */
async function requirePythonHl7(): Promise<void> {
  const probe = await run(PYTHON, ['-c', 'import hl7']);
  if (probe.code !== 0) {
    throw new Error(
      `python-hl7 is not importable by ${PYTHON} (${probe.stderr.trim().split('\n').pop() ?? ''}): ` +
        `install Debian's python3-hl7: ${INSTALL_PYTHON_HL7}`,
    );
  }
}

/** One line of the python sender's output: an ACK as python-hl7 read it. */
const PythonAck = z.object({
  charset: z.string(),
  codec: z.string(),
  msh6: z.string(),
  msa1: z.string(),
  msa2: z.string(),
});

describe("Debian's python3-hl7 (its MLLP client, as mllp_send -f uses it)", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cw-python-hl7-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('two framed Latin-1 messages with CR LF between the frames: two AAs in Latin-1, read by MSH-18', async () => {
    await requirePythonHl7();
    // HÔPITAL (0xD4) in MSH-4, which the ACK echoes in MSH-6, and MÜLLER (0xDC) in PID-5.
    const message = (n: number) =>
      Buffer.from(
        adt({
          controlId: `PYL-${n}`,
          id: `Q-PYL-${n}`,
          facility: 'H\u00d4PITAL',
          charset: '8859/1',
          name: 'M\u00dcLLER^J\u00dcRGEN',
        }),
        'latin1',
      );
    const framed = (body: Buffer) => Buffer.concat([Buffer.of(0x0b), body, Buffer.of(0x1c, 0x0d)]);
    const file = join(dir, 'two-latin1.hl7');
    await writeFile(
      file,
      Buffer.concat([
        framed(message(1)),
        Buffer.from('\r\n'),
        framed(message(2)),
        Buffer.from('\r\n'),
      ]),
    );

    const result = await run(PYTHON, [PYTHON_SENDER, '127.0.0.1', String(h.mllp.port), file]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const acks = result.stdout
      .trim()
      .split('\n')
      .map((line) => PythonAck.parse(JSON.parse(line)));
    const expected = (controlId: string) => ({
      charset: '8859/1',
      codec: 'iso8859-1',
      // Read right only when the ACK was decoded as Latin-1 (as UTF-8, 0xD4 alone is an error).
      msh6: 'H\u00d4PITAL',
      msa1: 'AA',
      msa2: controlId,
    });
    expect(acks).toEqual([expected('PYL-1'), expected('PYL-2')]);
    expect(await h.crosswalk.find('Q-PYL-1')).toBeDefined();
    expect(await h.crosswalk.find('Q-PYL-2')).toBeDefined();
  });
});

describe("npm's @medplum/hl7 (Hl7Client.sendAndWait)", () => {
  /**
   * `sendAndWait` on a fresh client: the ACK it resolves with, and the client's error events (an
   * ACK it cannot match to a message, a socket error). `timeoutMs` only keeps a missing ACK from
   * hanging the test: it fails the test, it is not a measure.
   */
  async function sendAndWait(text: string) {
    const client = new Hl7Client({ host: '127.0.0.1', port: h.mllp.port });
    const errors: Error[] = [];
    client.addEventListener('error', (event: Hl7ErrorEvent) => errors.push(event.error));
    try {
      const ack = await client.sendAndWait(Hl7Message.parse(text), { timeoutMs: 30_000 });
      return {
        ack: {
          msa1: ack.getSegment('MSA')?.getField(1)?.toString(),
          msa2: ack.getSegment('MSA')?.getField(2)?.toString(),
        },
        errors,
      };
    } finally {
      await client.close();
    }
  }

  for (const [name, msh2, tag] of [
    ['normal (^~\\&)', '^~\\&', 'N4'],
    ['three encoding characters (^~\\)', '^~\\', 'T3'],
    ['five, with the HL7 2.7 truncation character (^~\\&#)', '^~\\&#', 'F5'],
  ] as const) {
    it(`MSH-2 ${name}: AA whose MSA-2 is MSH-10, and the patient is stored`, async () => {
      const controlId = `MP-${tag}`;
      const { ack, errors } = await sendAndWait(adt({ controlId, id: `Q-${controlId}`, msh2 }));
      expect(ack.msa1).toBe('AA');
      expect(ack.msa2).toBe(controlId);
      expect(errors).toEqual([]);
      expect(await h.crosswalk.find(`Q-${controlId}`)).toBeDefined();
    });
  }

  it('MSH-2 with two characters (^~): sendAndWait resolves with AR whose MSA-2 is MSH-10', async () => {
    const { ack, errors } = await sendAndWait(
      adt({ controlId: 'MP-E2', id: 'Q-MP-E2', msh2: '^~' }),
    );
    expect(ack.msa1).toBe('AR');
    expect(ack.msa2).toBe('MP-E2');
    expect(errors).toEqual([]);
    expect(await h.crosswalk.find('Q-MP-E2')).toBeUndefined();
  });
});
