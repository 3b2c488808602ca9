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

const secrets = () => ({
  CROSSWALK_KEY: randomBytes(32).toString('base64'),
  INGEST_TOKENS: randomBytes(24).toString('base64'),
  SERVICE_API_KEY: randomBytes(20).toString('hex'),
});

/** A delivery channel (the webhook), so that only what a test is about is missing. */
const WEBHOOK = {
  WEBHOOK_URL: 'https://hospital.example/results',
  WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
};

const paths = (env: Record<string, string>, role: 'ingest' | 'work' | 'start') =>
  roleProblems(loadConfig({ env: { ...WEBHOOK, ...env } }), role).map((p) => p.path);

describe('roleProblems', () => {
  let certs: TestCertificates;
  let garbage: string;
  beforeAll(() => {
    certs = createTestCertificates();
    garbage = join(mkdtempSync(join(tmpdir(), 'cw-role-')), 'garbage.pem');
    writeFileSync(garbage, 'not a certificate');
  });
  afterAll(() => certs.remove());

  it("lists every missing secret of start, and only each role's own", () => {
    expect(paths({}, 'start')).toEqual([
      'identity.crosswalk_key',
      'ingest.tokens',
      'service.api_key',
    ]);
    expect(paths({}, 'ingest')).toEqual(['identity.crosswalk_key', 'ingest.tokens']);
    expect(paths({}, 'work')).toEqual(['identity.crosswalk_key', 'service.api_key']);
    expect(paths(secrets(), 'start')).toEqual([]);
  });

  it('refuses an enabled queue view without QUEUE_VIEW_TOKENS (ingest only)', () => {
    const enabled = { ...secrets(), QUEUE_VIEW_ENABLED: 'true' };
    expect(paths(enabled, 'ingest')).toEqual(['admin.queue_view.tokens']);
    expect(paths(enabled, 'start')).toEqual(['admin.queue_view.tokens']);
    expect(paths(enabled, 'work')).toEqual([]);
    const tokens = { ...enabled, QUEUE_VIEW_TOKENS: randomBytes(24).toString('base64') };
    expect(paths(tokens, 'start')).toEqual([]);
  });

  it('refuses a pipeline with no delivery channel (workers only)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cw-role-')), 'c.yaml');
    writeFileSync(file, 'delivery:\n  outbound_queue: { enabled: false }\n');
    const config = loadConfig({ file, env: secrets() });
    expect(roleProblems(config, 'work').map((p) => p.path)).toEqual(['delivery']);
    expect(roleProblems(config, 'ingest')).toEqual([]);
  });

  it('checks the TLS and CA files, and that TLS files go with rediss://', () => {
    const good = {
      ...secrets(),
      REDIS_URL: 'rediss://cw:pw@127.0.0.1:6380',
      REDIS_TLS_CA_FILE: certs.caFile,
      REDIS_TLS_CERT_FILE: certs.clientCertFile,
      REDIS_TLS_KEY_FILE: certs.clientKeyFile,
      OUTBOUND_CA_FILE: certs.caFile,
    };
    expect(paths(good, 'start')).toEqual([]);
    expect(
      paths(
        {
          ...good,
          REDIS_URL: 'redis://127.0.0.1:6379',
          REDIS_TLS_CA_FILE: '/nonexistent/ca.pem',
          REDIS_TLS_KEY_FILE: certs.caFile,
          OUTBOUND_CA_FILE: garbage,
        },
        'work',
      ),
    ).toEqual(['redis.url', 'redis.tls.ca_file', 'redis.tls.key_file', 'outbound.ca_file']);
    const { REDIS_TLS_KEY_FILE: _key, ...noKey } = good;
    expect(paths(noKey, 'ingest')).toEqual(['redis.tls.key_file']);
  });

  it('checks the MLLP certificate and key for ingest only', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cw-role-')), 'c.yaml');
    writeFileSync(
      file,
      `hl7v2:\n  mllp:\n    tls: { cert_path: ${JSON.stringify(certs.certFile)}, key_path: null }\n`,
    );
    const config = loadConfig({ file, env: { ...WEBHOOK, ...secrets() } });
    expect(roleProblems(config, 'ingest').map((p) => p.path)).toEqual(['hl7v2.mllp.tls.key_path']);
    expect(roleProblems(config, 'work')).toEqual([]);
  });

  it('throws one ConfigError with every problem', () => {
    let caught: unknown;
    try {
      assertRoleConfig(loadConfig({ env: WEBHOOK }), 'start');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).problems).toHaveLength(3);
    expect((caught as ConfigError).message).toMatch(/CROSSWALK_KEY is not set/);
  });
});
