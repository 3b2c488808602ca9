import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { testRedisUrl } from '../../support/redis.ts';

async function check(env: Record<string, string>) {
  const cli = new CliProcess(['config', 'check'], {
    REDIS_URL: testRedisUrl(),
    CROSSWALK_KEY: generateCrosswalkSecret(),
    INGEST_TOKENS: randomBytes(24).toString('base64'),
    SERVICE_API_KEY: randomBytes(20).toString('hex'),
    WEBHOOK_URL: 'https://hospital.example/results',
    WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    ...env,
  });
  const code = await cli.exited;
  return { code, lines: cli.stdout };
}

/** `config check` in production warns about a service on this machine, and still passes. */
describe('config check and the service base URL', () => {
  it('warns when NODE_ENV=production runs with service.env local (the default)', async () => {
    const { code, lines } = await check({ NODE_ENV: 'production' });
    expect(code, lines.join('\n')).toBe(0);
    expect(lines).toContain('configuration is valid for start');
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^warning: service\.env: NODE_ENV is production but service\.env is local: queries go to 127\.0\.0\.1:8090 /,
      ),
    );
  });

  it('warns about a loopback SERVICE_BASE_URL in production, naming only its host', async () => {
    const { code, lines } = await check({
      NODE_ENV: 'production',
      SERVICE_ENV: 'staging',
      SERVICE_BASE_URL: 'http://[::1]:9000/base-path-marker',
    });
    expect(code, lines.join('\n')).toBe(0);
    const warnings = lines.filter((l) => l.startsWith('warning: service'));
    expect(warnings).toEqual([expect.stringContaining('loopback address ([::1]:9000)')]);
    expect(lines.join('\n')).not.toContain('base-path-marker');
  });

  it('says nothing outside production, nor for a service elsewhere', async () => {
    const envs: Record<string, string>[] = [
      {},
      { NODE_ENV: 'production', SERVICE_BASE_URL: 'https://cgs.example.org' },
    ];
    for (const env of envs) {
      const { code, lines } = await check(env);
      expect(code, lines.join('\n')).toBe(0);
      expect(lines.filter((l) => l.startsWith('warning: service'))).toEqual([]);
    }
  });
});
