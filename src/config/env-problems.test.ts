import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.ts';
import { loadConfig } from './load-config.ts';

/** The ConfigError `loadConfig` throws for `env` (and a config file of `yaml`). */
function refusal(env: NodeJS.ProcessEnv, yaml?: string): ConfigError {
  let file: string | undefined;
  if (yaml !== undefined) {
    file = join(mkdtempSync(join(tmpdir(), 'cw-env-problems-')), 'config.yaml');
    writeFileSync(file, yaml);
  }
  try {
    loadConfig({ env, ...(file === undefined ? {} : { file }) });
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration problems of environment variables', () => {
  it('names the variable of a bad integer, with its range and the value given', () => {
    const err = refusal({ INGEST_PORT: 'abc' });
    expect(err.problems).toEqual([
      {
        path: 'ingest.port',
        variable: 'INGEST_PORT',
        message: 'expected an integer from 0 to 65535, got "abc"',
      },
    ]);
    expect(err.message).toContain(
      'INGEST_PORT (ingest.port): expected an integer from 0 to 65535, got "abc"',
    );
  });

  it('says the range of an integer out of it', () => {
    expect(refusal({ METRICS_PORT: '70000' }).message).toContain(
      'METRICS_PORT (worker.metrics_port): expected an integer from 0 to 65535, got "70000"',
    );
    // Bounded on one side only: zod's own words, and the value.
    expect(refusal({ SERVICE_TIMEOUT_MS: '-5' }).message).toMatch(
      /SERVICE_TIMEOUT_MS \(service\.timeout_ms\): .*0.*, got "-5"/,
    );
    expect(refusal({ SERVICE_TIMEOUT_MS: 'soon' }).message).toContain(
      'SERVICE_TIMEOUT_MS (service.timeout_ms): expected an integer, got "soon"',
    );
  });

  it('shows the form a Redis URL must take', () => {
    const err = refusal({ REDIS_URL: 'localhost:6391' });
    expect(err.message).toContain(
      'REDIS_URL (redis.url): expected redis://[user:password@]host:port[/db], or rediss://… for TLS, got "localhost:6391"',
    );
  });

  it('shows the form of the other URLs', () => {
    const err = refusal({
      WEBHOOK_URL: 'hospital.example/results',
      SERVICE_BASE_URL: 'cgs.example',
      FHIR_BASE_URL: 'ftp://fhir.example',
    });
    expect(err.message).toContain('WEBHOOK_URL (delivery.webhook.url): expected https://');
    expect(err.message).toContain('SERVICE_BASE_URL (service.base_url): expected https://');
    expect(err.message).toContain('FHIR_BASE_URL (fhir.base_url): expected https://');
  });

  it('hides the password of a refused URL', () => {
    const planted = 'PLANTED-redis-password-7f3a';
    const err = refusal({ REDIS_URL: `http://cw:${planted}@127.0.0.1:6379` });
    expect(err.message).toContain('got "http://cw:***@127.0.0.1:6379"');
    expect(err.message).not.toContain(planted);
    expect(JSON.stringify(err.problems)).not.toContain(planted);
  });

  it('never quotes the value of a secret variable', () => {
    const token = 'PLANTED-short';
    const proxyPassword = 'PLANTED-proxy-password';
    const err = refusal({
      INGEST_TOKENS: token,
      HTTPS_PROXY: `http//user:${proxyPassword}@proxy.example:3128`,
    });
    expect(err.message).toContain('INGEST_TOKENS (ingest.tokens.0): ');
    expect(err.message).toContain('HTTPS_PROXY (outbound.proxy.https): expected http://');
    for (const planted of [token, proxyPassword, 'PLANTED']) {
      expect(err.message).not.toContain(planted);
      expect(JSON.stringify(err.problems)).not.toContain(planted);
    }
  });

  it('says what a switch takes', () => {
    expect(refusal({ QUEUE_VIEW_ENABLED: 'maybe' }).message).toContain(
      'QUEUE_VIEW_ENABLED (admin.queue_view.enabled): expected true or false (or 1/0, yes/no), got "maybe"',
    );
  });

  it('names a value from the file by its path alone', () => {
    const err = refusal({}, 'ingest: { port: 70000 }\n');
    expect(err.problems.map((p) => p.path)).toEqual(['ingest.port']);
    expect(err.problems[0]?.variable).toBeUndefined();
    expect(err.message).toMatch(/^ {2}ingest\.port: /m);
  });
});
