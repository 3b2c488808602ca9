import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('names an unreadable file', () => {
    const problems = problemsOf(() => loadConfig({ file: '/nonexistent/cw.yaml', env: {} }));
    expect(problems[0]?.message).toMatch(/cannot read \/nonexistent\/cw\.yaml/);
  });
});
