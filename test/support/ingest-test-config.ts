import type { Config } from '../../src/config/config-schema.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import { isolatedRedis, testRedisEnv } from './redis.ts';

/**
 * Redis under a test prefix of its own, and the configuration an ingest harness starts from: the
 * defaults with `token` as the one ingest token, that prefix, `trace` logs and a fresh crosswalk key,
 * with `env` on top.
 */
export async function isolatedIngestConfig(
  token: string,
  env: Record<string, string> = {},
): Promise<{ env: Awaited<ReturnType<typeof isolatedRedis>>; loaded: Config }> {
  const redis = await isolatedRedis();
  const loaded = loadConfig({
    env: {
      INGEST_TOKENS: token,
      REDIS_PREFIX: redis.prefix,
      LOG_LEVEL: 'trace',
      CROSSWALK_KEY: generateCrosswalkSecret(),
      ...env,
    },
  });
  return { env: redis, loaded };
}

/** The environment of `concordance-worker ingest` on the test's Redis: free ports, `debug` logs. */
export function listeningIngestEnv(): Record<string, string> {
  return {
    ...testRedisEnv(),
    INGEST_PORT: '0',
    INGEST_HOST: '127.0.0.1',
    MLLP_PORT: '0',
    LOG_LEVEL: 'debug',
  };
}
