import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import type { Config } from '../../../src/config/config-schema.ts';
import { loadConfig } from '../../../src/config/load-config.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { runWorker, type RunningWorker } from '../../../src/runtime/run-worker.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { captureLogs } from '../../support/log-capture.ts';
import { isolatedRedis, testRedisEnv } from '../../support/redis.ts';

/** A receiver on another machine, over plain HTTP; its path and query are not for the log. */
const REMOTE = 'http://receiver.hospital.example:8081/hooks/PATH-MARKER?token=QUERY-MARKER';
const WARNING = 'webhook deliveries go over plain http:// to another machine';

const secrets = () => ({
  SERVICE_API_KEY: randomBytes(20).toString('hex'),
  CROSSWALK_KEY: generateCrosswalkSecret(),
  WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')} whsec_${randomBytes(32).toString('base64')}`,
});

let running: RunningWorker | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await running?.close();
  running = undefined;
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** The worker role in this process, on a prefix of its own, logging into a capture. */
async function startWorker(env: Record<string, string>) {
  const isolated = await isolatedRedis();
  cleanups.push(() => isolated.cleanup());
  const config = loadConfig({
    env: {
      ...testRedisEnv(),
      REDIS_PREFIX: isolated.prefix,
      SERVICE_BASE_URL: 'http://127.0.0.1:9',
      METRICS_PORT: '0',
      ...env,
    },
  });
  const logs = captureLogs('info');
  running = await runWorker(
    { ...config, worker: { ...config.worker, host: '127.0.0.1' } },
    logs.logger,
  );
  await running.ready;
  return logs;
}

const entries = (lines: readonly string[]) =>
  lines.map((line) => JSON.parse(line) as Record<string, unknown>);

describe('a plain http:// webhook to another machine', () => {
  it('allowed: the worker logs a warning at start, naming the host only', async () => {
    const env = { ...secrets(), WEBHOOK_URL: REMOTE, WEBHOOK_ALLOW_PLAIN_HTTP: 'true' };
    const logs = await startWorker(env);
    const warnings = entries(logs.lines).filter(
      (e) =>
        e.msg ===
        `${WARNING} (allowed by WEBHOOK_ALLOW_PLAIN_HTTP): results cross the network unencrypted; use https://`,
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, host: 'receiver.hospital.example:8081' });
    // It comes before the workers start, and nothing logged says the path, query or a secret.
    const messages = entries(logs.lines).map((e) => e.msg);
    expect(messages.indexOf(warnings[0]?.msg)).toBeLessThan(messages.indexOf('workers started'));
    const text = logs.lines.join('\n');
    for (const marker of ['PATH-MARKER', 'QUERY-MARKER', ...env.WEBHOOK_SECRET.split(' ')]) {
      expect(text).not.toContain(marker);
    }
  });

  it('to this machine, or over https://: no warning', async () => {
    for (const url of ['http://127.0.0.1:9/hook', 'https://receiver.hospital.example/hook']) {
      const logs = await startWorker({ ...secrets(), WEBHOOK_URL: url });
      expect(
        logs.lines.some((line) => line.includes(WARNING)),
        url,
      ).toBe(false);
      expect(logs.lines.some((line) => line.includes('workers started'))).toBe(true);
      await running?.close();
      running = undefined;
    }
  });

  it('not allowed: the worker refuses to start, whichever way its configuration was built', async () => {
    const config = loadConfig({
      env: { ...secrets(), WEBHOOK_URL: 'https://receiver.hospital.example/hook' },
    });
    const plain: Config = {
      ...config,
      delivery: {
        ...config.delivery,
        webhook: { ...config.delivery.webhook, url: REMOTE },
      },
    };
    const logs = captureLogs('info');
    const refused = await runWorker(plain, logs.logger).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).problems).toMatchObject([
      {
        path: 'delivery.webhook.url',
        message: expect.stringContaining('WEBHOOK_ALLOW_PLAIN_HTTP=true'),
      },
    ]);
    expect(logs.lines).toEqual([]);
  });
});

describe('config check and start-up, as processes', () => {
  const run = async (args: string[], env: Record<string, string>) => {
    const cli = new CliProcess(args, {
      ...testRedisEnv(),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
      ...env,
    });
    const code = await cli.exited;
    return { code, output: cli.lines.join('\n') };
  };

  it('refuse it with how to allow it; allowed, config check prints the warning', async () => {
    const env = { ...secrets(), WEBHOOK_URL: REMOTE };
    for (const args of [['config', 'check'], ['config', 'check', '--role', 'work'], ['work']]) {
      const refused = await run(args, env);
      expect(refused.code, refused.output).toBe(1);
      expect(refused.output).toContain('delivery.webhook.url');
      expect(refused.output).toContain(
        'WEBHOOK_URL is plain http:// to receiver.hospital.example:8081, another machine',
      );
      expect(refused.output).toContain('WEBHOOK_ALLOW_PLAIN_HTTP=true');
    }

    const allowed = await run(['config', 'check'], { ...env, WEBHOOK_ALLOW_PLAIN_HTTP: '1' });
    expect(allowed.code, allowed.output).toBe(0);
    expect(allowed.output).toContain(
      `warning: delivery.webhook.url: ${WARNING} (allowed by WEBHOOK_ALLOW_PLAIN_HTTP)`,
    );
    expect(allowed.output).toContain('(host receiver.hospital.example:8081)');
    expect(allowed.output).toContain('configuration is valid for start');
    for (const marker of ['PATH-MARKER', 'QUERY-MARKER', ...env.WEBHOOK_SECRET.split(' ')]) {
      expect(allowed.output).not.toContain(marker);
    }
  });
});
