import type { Config } from '../../src/config/config-schema.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import { isolatedRedis } from './redis.ts';

/**
 * Redis under a test prefix of its own, and the configuration an ingest harness starts from: the
 * defaults with `token` as the one ingest token, that prefix, `trace` logs and a fresh crosswalk key.
 */
export async function isolatedIngestConfig(
  token: string,
): Promise<{ env: Awaited<ReturnType<typeof isolatedRedis>>; loaded: Config }> {
  const env = await isolatedRedis();
  const loaded = loadConfig({
    env: {
      INGEST_TOKENS: token,
      REDIS_PREFIX: env.prefix,
      LOG_LEVEL: 'trace',
      CROSSWALK_KEY: generateCrosswalkSecret(),
    },
  });
  return { env, loaded };
}
