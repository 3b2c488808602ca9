import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.ts';
import { loadConfig, serviceBaseUrl } from './load-config.ts';

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-config-')), 'config.yaml');
  writeFileSync(path, text);
  return path;
}

function problemsOf(run: () => unknown): { path: string; message: string }[] {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('defaults to the local environment served by the simulator', () => {
    const config = loadConfig({ env: {} });
    expect(config.service.env).toBe('local');
    expect(serviceBaseUrl(config)).toBe('http://127.0.0.1:8090');
    expect(config.service.statuses.success).toContain('synthesis_success');
    expect(config.service.api_key).toBeUndefined();
  });

  it('lets SERVICE_BASE_URL win over the chosen environment', () => {
    const config = loadConfig({
      env: { SERVICE_ENV: 'production', SERVICE_BASE_URL: 'https://cgs.example.org' },
    });
    expect(serviceBaseUrl(config)).toBe('https://cgs.example.org');
  });

  it('picks the chosen environment from a config file', () => {
    const path = file(
      'service:\n  environments:\n    staging: { base_url: "https://s.example.org" }\n',
    );
    const config = loadConfig({ file: path, env: { SERVICE_ENV: 'staging' } });
    expect(serviceBaseUrl(config)).toBe('https://s.example.org');
  });

  it('refuses an environment that has no base URL', () => {
    expect(problemsOf(() => loadConfig({ env: { SERVICE_ENV: 'production' } }))).toEqual([
      expect.objectContaining({ path: 'service.environments.production.base_url' }),
    ]);
  });

  it('refuses a claim lease no longer than the service timeout (a slow POST would be sent twice)', () => {
    const path = file('service:\n  timeout_ms: 10000\nqueries:\n  dispatch: { lease_ms: 10000 }\n');
    expect(problemsOf(() => loadConfig({ file: path, env: {} }))).toEqual([
      expect.objectContaining({
        path: 'queries.dispatch.lease_ms',
        message: expect.stringContaining('above service.timeout_ms (10000)'),
      }),
    ]);
    const longer = file(
      'service:\n  timeout_ms: 10000\nqueries:\n  dispatch: { lease_ms: 10001 }\n',
    );
    expect(loadConfig({ file: longer, env: {} }).queries.dispatch.lease_ms).toBe(10_001);
  });

  it('lists every problem by path, not only the first', () => {
    const path = file(
      'service:\n  timeout_ms: -1\n  retry: { limit: many }\n  surprise: 1\nlog:\n  level: loud\n',
    );
    const paths = problemsOf(() => loadConfig({ file: path, env: {} })).map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining(['service.timeout_ms', 'service.retry.limit', 'service', 'log.level']),
    );
  });

  it('reads numbers from the environment and checks them', () => {
    expect(loadConfig({ env: { SERVICE_TIMEOUT_MS: '2500' } }).service.timeout_ms).toBe(2500);
    expect(problemsOf(() => loadConfig({ env: { SERVICE_TIMEOUT_MS: 'soon' } }))).toEqual([
      expect.objectContaining({ path: 'service.timeout_ms' }),
    ]);
  });

  it('reads the outage settings from the environment, with defaults that fit Kubernetes', () => {
    const defaults = loadConfig({ env: {} });
    expect(defaults.shutdown.grace_ms).toBe(25_000);
    expect(defaults.redis.command_timeout_ms).toBe(2_000);
    expect(defaults.hl7v2.mllp).toMatchObject({ idle_timeout_ms: 60_000, max_connections: 100 });
    const set = loadConfig({
      env: { SHUTDOWN_GRACE_MS: '10000', REDIS_COMMAND_TIMEOUT_MS: '500' },
    });
    expect(set.shutdown.grace_ms).toBe(10_000);
    expect(set.redis.command_timeout_ms).toBe(500);
    expect(problemsOf(() => loadConfig({ env: { SHUTDOWN_GRACE_MS: '10' } }))).toEqual([
      expect.objectContaining({ path: 'shutdown.grace_ms' }),
    ]);
  });

  it('keeps secrets out of files', () => {
    const path = file('service:\n  api_key: in-a-file\n');
    expect(problemsOf(() => loadConfig({ file: path, env: {} }))).toEqual([
      expect.objectContaining({ path: 'service.api_key' }),
    ]);
  });

  it('allows the assembler metadata keys by default; refuses an allowed key that is identifying', () => {
    expect(loadConfig({ env: {} }).privacy.metadata_allowed_keys).toEqual([
      'intervention_type',
      'value',
      'unit',
      'reference_range',
      'interpretation',
      'status',
      'days_before_assembly',
      'problem_list',
    ]);
    const path = file('privacy:\n  metadata_allowed_keys: [value, MRN]\n');
    expect(problemsOf(() => loadConfig({ file: path, env: {} }))).toEqual([
      {
        path: 'privacy.metadata_allowed_keys.1',
        message: expect.stringContaining('identifying_fields'),
      },
    ]);
  });

  it('names an unreadable file', () => {
    const problems = problemsOf(() => loadConfig({ file: '/nonexistent/cw.yaml', env: {} }));
    expect(problems[0]?.message).toMatch(/cannot read \/nonexistent\/cw\.yaml/);
  });
});

describe('loadConfig: secret strength', () => {
  const strong = {
    CROSSWALK_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_URL: 'https://receiver.example.org/hook',
    WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    INGEST_TOKENS: `${randomBytes(24).toString('base64')},${randomBytes(16).toString('hex')}`,
    SERVICE_API_KEY: randomBytes(20).toString('hex'),
    FHIR_TOKEN: randomBytes(20).toString('base64url'),
  };

  it('accepts strong secrets', () => {
    const config = loadConfig({ env: strong });
    expect(config.ingest.tokens).toHaveLength(2);
  });

  it("lists every weak secret by path, the issue's three examples included", () => {
    const problems = problemsOf(() =>
      loadConfig({
        env: {
          ...strong,
          CROSSWALK_KEY: Buffer.alloc(32).toString('base64'),
          WEBHOOK_SECRET: `whsec_${Buffer.alloc(12).toString('base64')}`,
          INGEST_TOKENS: `${randomBytes(24).toString('base64')},${'a'.repeat(16)}`,
          SERVICE_API_KEY: 'changeme',
          FHIR_TOKEN: 'xxxx',
        },
      }),
    );
    expect(problems.map((p) => p.path)).toEqual([
      'identity.crosswalk_key',
      'delivery.webhook.secret',
      'ingest.tokens.1',
      'service.api_key',
      'fhir.token',
    ]);
    const text = problems.map((p) => p.message).join('\n');
    expect(text).not.toContain(strong.INGEST_TOKENS.split(',')[0]);
  });

  it('takes the queue view from the environment: off by default, its own strong tokens', () => {
    const view = randomBytes(24).toString('base64url');
    expect(loadConfig({ env: strong }).admin.queue_view).toEqual({
      enabled: false,
      session_ttl_s: 28_800,
      secure_cookie: 'auto',
    });
    for (const [raw, enabled] of [
      ['true', true],
      ['1', true],
      ['YES', true],
      ['false', false],
      ['0', false],
    ] as const) {
      const config = loadConfig({
        env: { ...strong, QUEUE_VIEW_ENABLED: raw, QUEUE_VIEW_TOKENS: ` ${view} ,` },
      });
      expect(config.admin.queue_view).toMatchObject({ enabled, tokens: [view] });
    }
    expect(problemsOf(() => loadConfig({ env: { QUEUE_VIEW_ENABLED: 'on' } }))).toEqual([
      expect.objectContaining({ path: 'admin.queue_view.enabled' }),
    ]);
    const reused = strong.INGEST_TOKENS.split(',')[0] ?? '';
    const problems = problemsOf(() =>
      loadConfig({
        env: {
          ...strong,
          ADMIN_TOKENS: view,
          QUEUE_VIEW_TOKENS: `${'a'.repeat(16)},${reused},${view}`,
        },
      }),
    );
    expect(problems.map((p) => p.path)).toEqual([
      'admin.queue_view.tokens.0',
      'admin.queue_view.tokens.1',
      'admin.queue_view.tokens.2',
    ]);
    expect(problems[1]?.message).toMatch(/also an ingest or admin token/);
    expect(problems.map((p) => p.message).join('\n')).not.toContain(reused);
    const path = file(`admin:\n  queue_view:\n    tokens: [${view}]\n`);
    expect(problemsOf(() => loadConfig({ file: path, env: {} }))).toEqual([
      {
        path: 'admin.queue_view.tokens',
        message: 'secrets come only from the environment: set QUEUE_VIEW_TOKENS',
      },
    ]);
  });

  it('refuses a placeholder password in REDIS_URL without repeating it', () => {
    const problems = problemsOf(() =>
      loadConfig({ env: { REDIS_URL: 'rediss://cw:change-me@redis.example.org:6380' } }),
    );
    expect(problems).toEqual([expect.objectContaining({ path: 'redis.url' })]);
    expect(problems[0]?.message).not.toContain('change-me');
    const strong = encodeURIComponent(randomBytes(18).toString('base64'));
    const url = `rediss://cw:${strong}@redis.example.org:6380`;
    expect(loadConfig({ env: { REDIS_URL: url } }).redis.url).toBe(url);
  });

  it("refuses the simulator's dev key for a real service, not for the local one", () => {
    expect(loadConfig({ env: { SERVICE_API_KEY: 'local-dev-key' } }).service.api_key).toBe(
      'local-dev-key',
    );
    const problems = problemsOf(() =>
      loadConfig({
        env: {
          SERVICE_ENV: 'production',
          SERVICE_BASE_URL: 'https://cgs.example.org',
          SERVICE_API_KEY: 'local-dev-key',
        },
      }),
    );
    expect(problems).toEqual([expect.objectContaining({ path: 'service.api_key' })]);
  });

  it('takes the Redis TLS files, the outbound CA file and the proxy from the environment', () => {
    const config = loadConfig({
      env: {
        REDIS_TLS_CA_FILE: '/etc/cw/redis-ca.pem',
        OUTBOUND_CA_FILE: '/etc/cw/hospital-ca.pem',
        HTTPS_PROXY: 'http://proxy.example.org:3128',
        https_proxy: 'http://lower.example.org:3128',
        NO_PROXY: 'localhost,.hospital.local',
      },
    });
    expect(config.redis.tls).toEqual({
      ca_file: '/etc/cw/redis-ca.pem',
      cert_file: null,
      key_file: null,
    });
    expect(config.outbound).toEqual({
      ca_file: '/etc/cw/hospital-ca.pem',
      proxy: { https: 'http://lower.example.org:3128', no_proxy: 'localhost,.hospital.local' },
    });
  });

  it('keeps the proxy (which may carry a password) out of files', () => {
    const path = file('outbound:\n  proxy: { https: "http://u:p@proxy.example.org:3128" }\n');
    expect(problemsOf(() => loadConfig({ file: path, env: {} }))).toEqual([
      expect.objectContaining({ path: 'outbound.proxy' }),
    ]);
  });
});
