import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** PEM files of a private CA and of a server certificate it signed (for 127.0.0.1 and localhost). */
export interface TestCertificates {
  dir: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  /** A client certificate signed by the same CA. */
  clientCertFile: string;
  clientKeyFile: string;
  /**
   * Another server certificate (and its key), signed by the same CA, in new files of `dir`: what a
   * renewal would bring. `fingerprint` is its SHA-256 fingerprint as Node prints it.
   */
  issueServer(): { certFile: string; keyFile: string; fingerprint: string };
  /** Removes the directory. */
  remove(): void;
}

const openssl = (dir: string, args: string[]) =>
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

function signed(dir: string, name: string, subject: string, extensions: string): void {
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    subject,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-sha256',
    '-extfile',
    `${name}.ext`,
  ]);
}

const SERVER_EXTENSIONS =
  'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n';

/** Generates a fresh CA, a server and a client certificate with `openssl` in a temporary directory. */
export function createTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'cw-tls-'));
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=concordance-worker test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  signed(dir, 'server', '/CN=localhost', SERVER_EXTENSIONS);
  signed(dir, 'client', '/CN=concordance-worker', 'extendedKeyUsage=clientAuth\n');
  let issued = 0;
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    certFile: join(dir, 'server.crt'),
    keyFile: join(dir, 'server.key'),
    clientCertFile: join(dir, 'client.crt'),
    clientKeyFile: join(dir, 'client.key'),
    issueServer() {
      issued += 1;
      const name = `server-${issued}`;
      signed(dir, name, '/CN=localhost', SERVER_EXTENSIONS);
      const certFile = join(dir, `${name}.crt`);
      return {
        certFile,
        keyFile: join(dir, `${name}.key`),
        fingerprint: new X509Certificate(readFileSync(certFile)).fingerprint256,
      };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
