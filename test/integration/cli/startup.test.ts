import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { newOutboundKey, OUTBOUND_QUEUE_LINES } from '../../support/outbound.ts';
import { testRedisUrl } from '../../support/redis.ts';

function badConfig(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-bad-')), 'config.yaml');
  writeFileSync(
    path,
    [
      'queries: { debounce_ms: -5, concurrency: 0 }',
      'presets:',
      '  rules:',
      '    - ccsr_category: XXX000',
      'ingest: { port: 70000 }',
    ].join('\n'),
  );
  return path;
}

function outboundConfig(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-outbound-')), 'config.yaml');
  writeFileSync(path, OUTBOUND_QUEUE_LINES.join('\n'));
  return path;
}

async function run(args: string[], env: Record<string, string> = {}) {
  const cli = new CliProcess(args, { REDIS_URL: testRedisUrl(), ...env });
  const code = await cli.exited;
  return { code, output: cli.lines.join('\n') };
}

describe('start-up checks', () => {
  it('config check lists every problem by path', async () => {
    const { code, output } = await run(['--config', badConfig(), 'config', 'check']);
    expect(code).toBe(1);
    for (const path of [
      'queries.debounce_ms',
      'queries.concurrency',
      'presets.rules.0.ccsr_category',
      'ingest.port',
    ]) {
      expect(output).toContain(path);
    }
  });

  it('config check validates what start validates: every missing secret, by path', async () => {
    const bare = await run(['config', 'check']);
    expect(bare.code).toBe(1);
    for (const variable of ['CROSSWALK_KEY', 'INGEST_TOKENS', 'SERVICE_API_KEY']) {
      expect(bare.output).toContain(`${variable} is not set`);
    }
    const ingest = await run(['config', 'check', '--role', 'ingest']);
    expect(ingest.code).toBe(1);
    expect(ingest.output).toContain('ingest.tokens');
    expect(ingest.output).not.toContain('service.api_key');

    const { code, output } = await run(['config', 'check'], {
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
      SERVICE_API_KEY: randomBytes(20).toString('hex'),
      WEBHOOK_URL: 'https://hospital.example/results',
      WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    });
    expect(code, output).toBe(0);
    expect(output).toContain('configuration is valid for start');
  });

  it('config check and start refuse the same weak secrets', async () => {
    const weak = {
      CROSSWALK_KEY: Buffer.alloc(32).toString('base64'),
      INGEST_TOKENS: 'a'.repeat(16),
      SERVICE_API_KEY: randomBytes(20).toString('hex'),
      WEBHOOK_URL: 'http://127.0.0.1:9/hook',
      WEBHOOK_SECRET: `whsec_${Buffer.alloc(12).toString('base64')}`,
    };
    const check = await run(['config', 'check'], weak);
    const start = await run(['start'], weak);
    for (const result of [check, start]) {
      expect(result.code).toBe(1);
      for (const path of ['identity.crosswalk_key', 'ingest.tokens.0', 'delivery.webhook.secret']) {
        expect(result.output).toContain(path);
      }
      expect(result.output).not.toContain('a'.repeat(16));
    }
  });

  it('config check accepts the defaults with a delivery channel, and says when there is none', async () => {
    const secrets = {
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
      SERVICE_API_KEY: randomBytes(20).toString('hex'),
    };
    const none = await run(['config', 'check'], secrets);
    expect(none.code).toBe(1);
    expect(none.output).toContain('no delivery channel is configured');

    const webhook = await run(['config', 'check'], {
      ...secrets,
      WEBHOOK_URL: 'https://hospital.example/results',
      WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    });
    expect(webhook.code, webhook.output).toBe(0);
    expect(webhook.output).toContain('configuration is valid');

    const queueWithoutKey = await run(['--config', outboundConfig(), 'config', 'check'], secrets);
    expect(queueWithoutKey.code).toBe(1);
    expect(queueWithoutKey.output).toContain(
      'delivery.outbound_queue.key: the outbound queue is enabled but OUTBOUND_KEY is not set',
    );
    const queue = await run(['--config', outboundConfig(), 'config', 'check'], {
      ...secrets,
      OUTBOUND_KEY: newOutboundKey(),
    });
    expect(queue.code, queue.output).toBe(0);
  });

  it('start and work refuse to run with no delivery channel, or an outbound queue without its key', async () => {
    const env = {
      SERVICE_API_KEY: randomBytes(20).toString('hex'),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
      CROSSWALK_KEY: generateCrosswalkSecret(),
      METRICS_PORT: '0',
      INGEST_PORT: '0',
      MLLP_PORT: '0',
    };
    for (const command of ['start', 'work']) {
      const none = await run([command], env);
      expect(none.code).toBe(1);
      expect(none.output).toContain('no delivery channel is configured');
      const noKey = await run(['--config', outboundConfig(), command], env);
      expect(noKey.code).toBe(1);
      expect(noKey.output).toContain('the outbound queue is enabled but OUTBOUND_KEY is not set');
    }
  });

  it('a configuration error stops start-up with every problem listed', async () => {
    const { code, output } = await run(['--config', badConfig(), 'start'], {
      CROSSWALK_KEY: generateCrosswalkSecret(),
    });
    expect(code).toBe(1);
    expect(output).toContain('queries.debounce_ms');
    expect(output).toContain('presets.rules.0.ccsr_category');
  });

  it('refuses to run without CROSSWALK_KEY, and ingest without INGEST_TOKENS', async () => {
    const noKey = await run(['start'], {
      SERVICE_API_KEY: randomBytes(20).toString('hex'),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
    });
    expect(noKey.code).toBe(1);
    expect(noKey.output).toMatch(/CROSSWALK_KEY is not set/);

    const noTokens = await run(['ingest'], { CROSSWALK_KEY: generateCrosswalkSecret() });
    expect(noTokens.code).toBe(1);
    expect(noTokens.output).toMatch(/INGEST_TOKENS is not set/);

    const noApiKey = await run(['work'], { CROSSWALK_KEY: generateCrosswalkSecret() });
    expect(noApiKey.code).toBe(1);
    expect(noApiKey.output).toMatch(/SERVICE_API_KEY is not set/);
  });
});
