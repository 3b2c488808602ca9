import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOKEN, startHarness, type Harness } from './support/ingest-harness.ts';
import { samplePatient } from '../../support/sample-patient.ts';

const MARKER = 'PLANTED-MRN-77';

let h: Harness;
let base: string;

beforeEach(async () => {
  h = await startHarness({ rules: [{ ccsr_category: 'CIR007' }], bodyLimitBytes: 8_192 });
  base = await h.app.listen({ port: 0, host: '127.0.0.1' });
});
afterEach(() => h.close());

/** Sends raw bytes and reads the answer until the server closes the connection. */
function rawRequest(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

describe('ingest over a listening socket', () => {
  it('accepts an authenticated update (202) and refuses one without a token (401)', async () => {
    const body = JSON.stringify({ patient_id: 'MRN-S1', assembled_patient: samplePatient });
    const accepted = await fetch(`${base}/v1/record-updates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body,
    });
    expect(accepted.status).toBe(202);
    const answer = (await accepted.json()) as { queries: { job_id: string }[] };
    expect((await h.due()).map((d) => d.jobId)).toEqual([answer.queries[0]?.job_id]);

    const refused = await fetch(`${base}/v1/record-updates`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('answers 413 for a streamed body over the limit', async () => {
    const res = await fetch(`${base}/v1/record-updates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ patient_id: 'MRN-S2', source: 'x'.repeat(10_000) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ detail: 'request body is larger than 8192 bytes' });
  });

  it('answers a request the HTTP parser refuses without logging its bytes', async () => {
    const answer = await rawRequest(
      base,
      `PUT /v1/patients/${MARKER}/presets/END002 HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${TOKEN}\r\nBad Header: \x01${MARKER}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('{"detail":"malformed HTTP request"}');
    expect(h.logLines.some((line) => line.includes('client connection error'))).toBe(true);
    for (const line of h.logLines) {
      expect(line).not.toContain(MARKER);
      expect(line).not.toContain(TOKEN);
    }
  });
});
