import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../config/config-error.ts';
import { loadConfig } from '../config/load-config.ts';
import {
  createTestCertificates,
  type TestCertificates,
} from '../../test/support/test-certificates.ts';
import { assertRoleConfig, roleProblems } from './role-problems.ts';

const SECRETS = {
  CROSSWALK_KEY: randomBytes(32).toString('base64'),
  INGEST_TOKENS: randomBytes(24).toString('base64'),
};

const problems = (env: Record<string, string>, role: 'ingest' | 'work' = 'ingest') =>
  roleProblems(loadConfig({ env: { ...SECRETS, ...env } }), role);

describe('the listeners’ TLS settings (roleProblems)', () => {
  let certs: TestCertificates;
  let other: TestCertificates;
  let garbage: string;
  beforeAll(() => {
    certs = createTestCertificates();
    other = createTestCertificates();
    garbage = join(mkdtempSync(join(tmpdir(), 'cw-listener-')), 'garbage.pem');
    writeFileSync(garbage, 'not a certificate');
  });
  afterAll(() => {
    certs.remove();
    other.remove();
  });

  it('reads the variables into ingest.tls and hl7v2.mllp.tls', () => {
    const config = loadConfig({
      env: {
        INGEST_TLS_CERT_FILE: certs.certFile,
        INGEST_TLS_KEY_FILE: certs.keyFile,
        INGEST_TLS_CA_FILE: certs.caFile,
        INGEST_TLS_CLIENT_CERTIFICATES: 'request',
        MLLP_TLS_CERT_FILE: certs.certFile,
        MLLP_TLS_KEY_FILE: certs.keyFile,
        MLLP_TLS_CA_FILE: certs.caFile,
        MLLP_TLS_CLIENT_CERTIFICATES: 'require',
      },
    });
    expect(config.ingest.tls).toEqual({
      cert_file: certs.certFile,
      key_file: certs.keyFile,
      ca_file: certs.caFile,
      client_certificates: 'request',
    });
    expect(config.hl7v2.mllp.tls).toEqual({
      cert_path: certs.certFile,
      key_path: certs.keyFile,
      ca_path: certs.caFile,
      client_certificates: 'require',
    });
    expect(loadConfig({ env: {} }).ingest.tls).toEqual({
      cert_file: null,
      key_file: null,
      ca_file: null,
      client_certificates: 'none',
    });
    expect(() => loadConfig({ env: { MLLP_TLS_CLIENT_CERTIFICATES: 'always' } })).toThrow(
      ConfigError,
    );
  });

  it('accepts usable files, for ingest only', () => {
    const env = {
      INGEST_TLS_CERT_FILE: certs.certFile,
      INGEST_TLS_KEY_FILE: certs.keyFile,
      INGEST_TLS_CA_FILE: certs.caFile,
      INGEST_TLS_CLIENT_CERTIFICATES: 'require',
      MLLP_TLS_CERT_FILE: certs.certFile,
      MLLP_TLS_KEY_FILE: certs.keyFile,
    };
    expect(problems(env)).toEqual([]);
    // The workers do not listen: their problems are their own, never these files'.
    const work = problems({ ...env, MLLP_TLS_KEY_FILE: garbage }, 'work').map((p) => p.path);
    expect(work.filter((path) => /tls/.test(path))).toEqual([]);
    expect(problems({ ...env, MLLP_TLS_KEY_FILE: garbage }).map((p) => p.path)).toEqual([
      'hl7v2.mllp.tls.key_path',
    ]);
  });

  it('names the variable of a missing half, an unreadable or non-PEM file, a mismatched key', () => {
    expect(problems({ INGEST_TLS_CERT_FILE: certs.certFile })).toEqual([
      {
        path: 'ingest.tls.key_file',
        message:
          'INGEST_TLS_KEY_FILE: is not set: HTTPS on the ingest port needs both a certificate and its key, or neither',
      },
    ]);
    expect(
      problems({ INGEST_TLS_CERT_FILE: '/nonexistent/tls.crt', INGEST_TLS_KEY_FILE: garbage }),
    ).toEqual([
      {
        path: 'ingest.tls.cert_file',
        message: 'INGEST_TLS_CERT_FILE: cannot read /nonexistent/tls.crt: ENOENT',
      },
      {
        path: 'ingest.tls.key_file',
        message: `INGEST_TLS_KEY_FILE: ${garbage} does not hold PEM a private key`,
      },
    ]);
    expect(
      problems({ MLLP_TLS_CERT_FILE: certs.certFile, MLLP_TLS_KEY_FILE: other.keyFile }),
    ).toEqual([
      {
        path: 'hl7v2.mllp.tls.key_path',
        message: `MLLP_TLS_KEY_FILE: the certificate in ${certs.certFile} was not made for the private key in ${other.keyFile}`,
      },
    ]);
    expect(
      problems({
        MLLP_TLS_CERT_FILE: certs.certFile,
        MLLP_TLS_KEY_FILE: certs.keyFile,
        MLLP_TLS_CA_FILE: garbage,
        MLLP_TLS_CLIENT_CERTIFICATES: 'require',
      }).map((p) => p.path),
    ).toEqual(['hl7v2.mllp.tls.ca_path']);
  });

  it('refuses client certificates without a CA, a CA without asking, either without TLS', () => {
    const tls = { MLLP_TLS_CERT_FILE: certs.certFile, MLLP_TLS_KEY_FILE: certs.keyFile };
    expect(problems({ ...tls, MLLP_TLS_CLIENT_CERTIFICATES: 'require' })).toEqual([
      {
        path: 'hl7v2.mllp.tls.ca_path',
        message:
          'MLLP_TLS_CA_FILE: is not set, but MLLP_TLS_CLIENT_CERTIFICATES is require: give the CAs that sign client certificates',
      },
    ]);
    expect(problems({ ...tls, MLLP_TLS_CA_FILE: certs.caFile }).map((p) => p.path)).toEqual([
      'hl7v2.mllp.tls.client_certificates',
    ]);
    expect(problems({ INGEST_TLS_CLIENT_CERTIFICATES: 'request' })).toEqual([
      {
        path: 'ingest.tls.client_certificates',
        message:
          'INGEST_TLS_CLIENT_CERTIFICATES: client certificates need TLS: set INGEST_TLS_CERT_FILE and INGEST_TLS_KEY_FILE too',
      },
    ]);
  });

  it('stops the start with one ConfigError naming the variable', () => {
    const config = loadConfig({
      env: { ...SECRETS, INGEST_TLS_CERT_FILE: certs.certFile, INGEST_TLS_KEY_FILE: garbage },
    });
    expect(() => assertRoleConfig(config, 'ingest')).toThrow(/INGEST_TLS_KEY_FILE: /);
  });
});
