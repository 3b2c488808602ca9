import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config/config-schema.ts';
import type { RunningProcess } from '../../../src/runtime/run-worker.ts';
import { runIngest } from '../../../src/runtime/run-ingest.ts';
import { eventually } from '../../support/eventually.ts';
import { captureLogs, type LogCapture } from '../../support/log-capture.ts';
import { isolatedIngestConfig, listeningIngestEnv } from '../../support/ingest-test-config.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import { createTestCertificates, type TestCertificates } from '../../support/test-certificates.ts';
import { fixture, frame, segmentOf, withCr } from '../hl7v2/support/hl7v2-harness.ts';

const TOKEN = 'listener-tls-token-0123456789';
/** Planted in the update: it must not appear in any log line. */
const PATIENT = 'MRN-TLS-PLANTED-7731';

interface Started {
  ingest: RunningProcess;
  /** `https://127.0.0.1:<port>` */
  url: string;
  mllpPort: number;
  logs: LogCapture;
  close(): Promise<void>;
}

/** `concordance-worker ingest` as the command starts it, with `env` on top of the test's. */
async function startIngest(env: Record<string, string>): Promise<Started> {
  const { env: redis, loaded } = await isolatedIngestConfig(TOKEN, {
    ...listeningIngestEnv(),
    ...env,
  });
  const config: Config = {
    ...loaded,
    hl7v2: { ...loaded.hl7v2, mllp: { ...loaded.hl7v2.mllp, host: '127.0.0.1' } },
  };
  const logs = captureLogs('debug');
  const ingest = await runIngest(config, logs.logger, {
    registry: new Registry(),
    healthServer: false,
  }).catch(async (err: unknown) => {
    await redis.cleanup();
    throw err;
  });
  await ingest.ready;
  const listening = await logs.waitFor((e) => e.msg === 'ingest listening');
  return {
    ingest,
    url: ingest.url,
    mllpPort: Number(listening.mllp_port),
    logs,
    async close() {
      await ingest.close();
      await redis.cleanup();
    },
  };
}

/** A POST over HTTPS: the status, the answer, and the certificate the server showed. */
function post(
  url: string,
  path: string,
  body: unknown,
  tls: ConnectionOptions,
): Promise<{ status: number; body: string; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        agent: false,
        ...tls,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            fingerprint: (res.socket as TLSSocket).getPeerCertificate().fingerprint256,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** Sends one HL7 message over MLLP on TLS: its ACK, or undefined when the server refused. */
async function sendOverTls(
  port: number,
  message: string,
  tls: ConnectionOptions,
): Promise<{ ack: string | undefined; fingerprint: string | undefined }> {
  return new Promise((resolve) => {
    let fingerprint: string | undefined;
    let received = Buffer.alloc(0);
    const socket = connect({ host: '127.0.0.1', port, ...tls });
    const done = (ack: string | undefined) => {
      resolve({ ack, fingerprint });
      socket.destroy();
    };
    socket.on('secureConnect', () => {
      fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.write(frame(message));
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf(Buffer.of(0x1c, 0x0d));
      if (end !== -1) done(received.subarray(1, end).toString('utf8'));
    });
    socket.on('error', () => done(undefined));
    socket.on('close', () => done(undefined));
  });
}

const msa = (ack: string | undefined) => segmentOf(ack ?? '', 'MSA')[1];

describe('TLS on the ingest port and on MLLP', () => {
  let certs: TestCertificates;
  let other: TestCertificates;
  let dir: string;
  beforeAll(() => {
    certs = createTestCertificates();
    other = createTestCertificates();
    dir = mkdtempSync(join(tmpdir(), 'cw-listener-tls-'));
  });
  afterAll(() => {
    certs.remove();
    other.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  const trust = () => ({ ca: readFileSync(certs.caFile) });
  const withClient = (of: TestCertificates) => ({
    ...trust(),
    cert: readFileSync(of.clientCertFile),
    key: readFileSync(of.clientKeyFile),
  });

  describe('server certificates', () => {
    let s: Started;
    const files = { cert: '', key: '' };
    beforeAll(async () => {
      // The process's own copies, rewritten below as a renewal would.
      files.cert = join(dir, 'tls.crt');
      files.key = join(dir, 'tls.key');
      copyFileSync(certs.certFile, files.cert);
      copyFileSync(certs.keyFile, files.key);
      s = await startIngest({
        INGEST_TLS_CERT_FILE: files.cert,
        INGEST_TLS_KEY_FILE: files.key,
        MLLP_TLS_CERT_FILE: files.cert,
        MLLP_TLS_KEY_FILE: files.key,
      });
    });
    afterAll(async () => {
      await s.close();
    });

    it('says at start that both listeners use TLS', async () => {
      expect(s.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      for (const listener of ['ingest', 'mllp']) {
        const line = await s.logs.waitFor(
          (e) => e.msg === 'listener uses tls' && e.listener === listener,
        );
        expect(line).toMatchObject({ tls: true, client_certificates: 'none' });
      }
    });

    it('accepts a record update over HTTPS (202), and nothing in clear', async () => {
      const res = await post(
        s.url,
        '/v1/record-updates',
        { patient_id: PATIENT, assembled_patient: samplePatient },
        trust(),
      );
      expect(res.status).toBe(202);
      expect(JSON.parse(res.body)).toMatchObject({ patient_service_id: expect.any(String) });
      // Plain HTTP to the same port is not served.
      const plain = await fetch(s.url.replace('https:', 'http:') + '/healthz').then(
        (r) => r.status,
        () => 'refused',
      );
      expect(plain).toBe('refused');
      expect(s.logs.lines.join('\n')).not.toContain(PATIENT);
    });

    it('answers an HL7 message over MLLP on TLS with its ACK', async () => {
      const { ack } = await sendOverTls(s.mllpPort, withCr(fixture('ADT-A08-01.hl7')), trust());
      expect(msa(ack)).toBe('AA');
    });

    it('serves the renewed certificate to new connections once the files are rewritten', async () => {
      const before = await sendOverTls(s.mllpPort, withCr(fixture('ADT-A08-01.hl7')), trust());
      const renewed = certs.issueServer();
      expect(before.fingerprint).not.toBe(renewed.fingerprint);
      writeFileSync(files.cert, readFileSync(renewed.certFile));
      writeFileSync(files.key, readFileSync(renewed.keyFile));
      await eventually(
        async () => (await post(s.url, '/v1/record-updates', {}, trust())).fingerprint,
        (served) => served === renewed.fingerprint,
      );
      await eventually(
        async () =>
          (await sendOverTls(s.mllpPort, withCr(fixture('ADT-A08-01.hl7')), trust())).fingerprint,
        (served) => served === renewed.fingerprint,
      );
      // Still serving: the renewed certificate answers an update.
      const res = await post(
        s.url,
        '/v1/record-updates',
        { patient_id: PATIENT, assembled_patient: samplePatient },
        trust(),
      );
      expect(res.status).toBe(202);
      expect(s.logs.lines.join('\n')).not.toMatch(/BEGIN|PRIVATE KEY/);
    });
  });

  describe('client certificates: require', () => {
    let s: Started;
    beforeAll(async () => {
      s = await startIngest({
        INGEST_TLS_CERT_FILE: certs.certFile,
        INGEST_TLS_KEY_FILE: certs.keyFile,
        INGEST_TLS_CA_FILE: certs.caFile,
        INGEST_TLS_CLIENT_CERTIFICATES: 'require',
        MLLP_TLS_CERT_FILE: certs.certFile,
        MLLP_TLS_KEY_FILE: certs.keyFile,
        MLLP_TLS_CA_FILE: certs.caFile,
        MLLP_TLS_CLIENT_CERTIFICATES: 'require',
      });
    });
    afterAll(async () => {
      await s.close();
    });

    it('MLLP: refuses a client without a certificate or with one of another CA', async () => {
      const message = withCr(fixture('ADT-A08-01.hl7'));
      expect((await sendOverTls(s.mllpPort, message, trust())).ack).toBeUndefined();
      expect((await sendOverTls(s.mllpPort, message, withClient(other))).ack).toBeUndefined();
      const accepted = await sendOverTls(s.mllpPort, message, withClient(certs));
      expect(msa(accepted.ack)).toBe('AA');
      await s.logs.waitFor((e) => e.msg === 'tls handshake refused' && e.listener === 'mllp');
    });

    it('HTTPS: refuses a client without a certificate or with one of another CA', async () => {
      const update = { patient_id: PATIENT, assembled_patient: samplePatient };
      const outcome = (tls: ConnectionOptions) =>
        post(s.url, '/v1/record-updates', update, tls).then(
          (res) => res.status,
          () => 'refused',
        );
      expect(await outcome(trust())).toBe('refused');
      expect(await outcome(withClient(other))).toBe('refused');
      expect(await outcome(withClient(certs))).toBe(202);
    });
  });

  it('refuses to start on a key that does not match its certificate, naming the variable', async () => {
    const error = await startIngest({
      INGEST_TLS_CERT_FILE: certs.certFile,
      INGEST_TLS_KEY_FILE: other.keyFile,
    }).then(
      (started) => started.close().then(() => undefined),
      (err: unknown) => err,
    );
    expect(String(error)).toMatch(/INGEST_TLS_KEY_FILE: the certificate in .* was not made for/);
  });
});
