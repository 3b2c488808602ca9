import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type ConnectionOptions, type Server } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../test/support/eventually.ts';
import { captureLogs, type LogCapture } from '../../test/support/log-capture.ts';
import {
  createTestCertificates,
  type TestCertificates,
} from '../../test/support/test-certificates.ts';
import { ReloadingTlsContext, type ReloadingTlsContextOptions } from './reloading-tls-context.ts';
import type { ClientCertificates } from './server-tls-material.ts';
import { TlsFilesError } from './tls-files-error.ts';

let certs: TestCertificates;
let other: TestCertificates;
let logs: LogCapture;
const cleanup: (() => unknown)[] = [];

beforeAll(() => {
  certs = createTestCertificates();
  other = createTestCertificates();
  logs = captureLogs('debug');
});
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});
afterAll(() => {
  // No certificate or key content in any line.
  expect(logs.lines.join('\n')).not.toMatch(/BEGIN|PRIVATE KEY/);
  certs.remove();
  other.remove();
});

/** A directory of the test's own with the server's certificate and key copied in. */
function filesDir(): { dir: string; certFile: string; keyFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cw-reload-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  copyFileSync(certs.certFile, certFile);
  copyFileSync(certs.keyFile, keyFile);
  return { dir, certFile, keyFile };
}

/** An echo server on a free port, served by a reloading context over `files`. */
async function echoServer(
  files: { certFile: string; keyFile: string; caFile?: string | null },
  options: Partial<ReloadingTlsContextOptions> & { clientCertificates?: ClientCertificates } = {},
): Promise<{ port: number; context: ReloadingTlsContext; server: Server }> {
  const context = new ReloadingTlsContext({
    listener: 'test',
    caFile: null,
    clientCertificates: 'none',
    logger: logs.logger,
    settleMs: 20,
    ...files,
    ...options,
  });
  const server = createServer(context.serverOptions(), (socket) => socket.pipe(socket));
  context.attach(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        context.close();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as AddressInfo).port, context, server };
}

/** The SHA-256 fingerprint of the certificate a new connection gets. */
async function servedFingerprint(port: number): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port, ca: readFileSync(certs.caFile) });
  await once(socket, 'secureConnect');
  const fingerprint = socket.getPeerCertificate().fingerprint256;
  socket.destroy();
  return fingerprint;
}

/** Whether a client with `options` gets its bytes echoed, or is refused. */
function exchange(port: number, options: ConnectionOptions = {}): Promise<'echoed' | 'refused'> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca: readFileSync(certs.caFile), ...options });
    socket.on('secureConnect', () => socket.write('ping'));
    socket.on('data', (chunk: Buffer) => {
      if (chunk.toString() === 'ping') {
        resolve('echoed');
        socket.destroy();
      }
    });
    socket.on('error', () => resolve('refused'));
    socket.on('close', () => resolve('refused'));
  });
}

/** A certificate file's SHA-256 fingerprint, as Node prints it. */
const fingerprintOf = (file: string) => new X509Certificate(readFileSync(file)).fingerprint256;

describe('ReloadingTlsContext', () => {
  it('serves new connections the new certificate once the files are rewritten', async () => {
    const files = filesDir();
    const { port } = await echoServer(files);
    expect(await servedFingerprint(port)).toBe(fingerprintOf(certs.certFile));
    const renewed = certs.issueServer();
    writeFileSync(files.certFile, readFileSync(renewed.certFile));
    writeFileSync(files.keyFile, readFileSync(renewed.keyFile));
    await eventually(
      () => servedFingerprint(port),
      (served) => served === renewed.fingerprint,
    );
    await logs.waitFor(
      (e) => e.msg === 'tls certificate reloaded' && e.fingerprint === renewed.fingerprint,
    );
  });

  it('follows a Kubernetes Secret update (the ..data symlink swapped)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cw-secret-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const version = (name: string, cert: string, key: string) => {
      mkdirSync(join(dir, name));
      copyFileSync(cert, join(dir, name, 'tls.crt'));
      copyFileSync(key, join(dir, name, 'tls.key'));
    };
    version('..2026_01_01_00_00_00.1', certs.certFile, certs.keyFile);
    symlinkSync('..2026_01_01_00_00_00.1', join(dir, '..data'));
    symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
    symlinkSync('..data/tls.key', join(dir, 'tls.key'));
    const { port } = await echoServer({
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
    });
    expect(await servedFingerprint(port)).toBe(fingerprintOf(certs.certFile));

    // What the kubelet does: a new version directory, a new symlink renamed over ..data.
    const renewed = certs.issueServer();
    version('..2026_01_02_00_00_00.2', renewed.certFile, renewed.keyFile);
    symlinkSync('..2026_01_02_00_00_00.2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, '..2026_01_01_00_00_00.1'), { recursive: true });
    await eventually(
      () => servedFingerprint(port),
      (served) => served === renewed.fingerprint,
    );
  });

  it('keeps the served certificate when the new files do not serve, and logs why', async () => {
    const files = filesDir();
    const { port } = await echoServer(files);
    const renewed = certs.issueServer();
    // The key of another certificate: refused.
    writeFileSync(files.keyFile, readFileSync(renewed.keyFile));
    const warning = await logs.waitFor(
      (e) =>
        String(e.msg).startsWith('tls certificate not reloaded') &&
        String(e.reason).includes(files.keyFile),
    );
    expect(warning).toMatchObject({ level: 40, listener: 'test' });
    expect(String(warning.reason)).toContain('was not made for the private key');
    expect(await servedFingerprint(port)).toBe(fingerprintOf(certs.certFile));
    expect(await exchange(port)).toBe('echoed');
    // Its certificate arrives: served.
    writeFileSync(files.certFile, readFileSync(renewed.certFile));
    await eventually(
      () => servedFingerprint(port),
      (served) => served === renewed.fingerprint,
    );
  });

  it('reads the files every poll interval, watched or not', async () => {
    const files = filesDir();
    const { port } = await echoServer(files, { watch: false, pollIntervalMs: 50 });
    const renewed = certs.issueServer();
    writeFileSync(files.certFile, readFileSync(renewed.certFile));
    writeFileSync(files.keyFile, readFileSync(renewed.keyFile));
    await eventually(
      () => servedFingerprint(port),
      (served) => served === renewed.fingerprint,
    );
  });

  it('with require: refuses a client without a certificate or with one of another CA', async () => {
    const { port } = await echoServer(
      { certFile: certs.certFile, keyFile: certs.keyFile, caFile: certs.caFile },
      { clientCertificates: 'require' },
    );
    expect(await exchange(port)).toBe('refused');
    expect(
      await exchange(port, {
        cert: readFileSync(other.clientCertFile),
        key: readFileSync(other.clientKeyFile),
      }),
    ).toBe('refused');
    expect(
      await exchange(port, {
        cert: readFileSync(certs.clientCertFile),
        key: readFileSync(certs.clientKeyFile),
      }),
    ).toBe('echoed');
    await logs.waitFor((e) => e.msg === 'tls handshake refused' && e.listener === 'test');
  });

  it('with request: accepts a client without a certificate, not one of another CA', async () => {
    const { port } = await echoServer(
      { certFile: certs.certFile, keyFile: certs.keyFile, caFile: certs.caFile },
      { clientCertificates: 'request' },
    );
    expect(await exchange(port)).toBe('echoed');
    expect(
      await exchange(port, {
        cert: readFileSync(certs.clientCertFile),
        key: readFileSync(certs.clientKeyFile),
      }),
    ).toBe('echoed');
    expect(
      await exchange(port, {
        cert: readFileSync(other.clientCertFile),
        key: readFileSync(other.clientKeyFile),
      }),
    ).toBe('refused');
    await logs.waitFor((e) => e.msg === 'tls client certificate refused');
  });

  it('refuses files that cannot serve at the start, naming the file', () => {
    const make =
      (certFile: string, keyFile: string, caFile: string | null = null) =>
      () =>
        new ReloadingTlsContext({
          listener: 'test',
          certFile,
          keyFile,
          caFile,
          clientCertificates: 'none',
          logger: logs.logger,
        });
    expect(make(certs.certFile, other.keyFile)).toThrow(TlsFilesError);
    expect(make(certs.certFile, other.keyFile)).toThrow(/was not made for the private key/);
    expect(make('/nonexistent/tls.crt', certs.keyFile)).toThrow(
      'cannot read /nonexistent/tls.crt: ENOENT',
    );
    expect(make(certs.keyFile, certs.keyFile)).toThrow(
      `${certs.keyFile} does not hold PEM certificates`,
    );
    expect(make(certs.certFile, certs.certFile)).toThrow(
      `${certs.certFile} does not hold a PEM private key`,
    );
    expect(make(certs.certFile, certs.keyFile, certs.keyFile)).toThrow(
      `${certs.keyFile} does not hold PEM certificates`,
    );
  });
});
