import {
  redisAnswers as answers,
  startPrivateRedis,
  type LocalRedis,
} from '../../tools/local-redis.ts';

/** A Redis the tests may use: from `testcontainers`, `REDIS_URL`, `localhost` or `redis-server`. */
export type RedisSource = LocalRedis;

async function fromTestcontainers(): Promise<RedisSource | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
  } catch {
    return undefined; // no Docker engine answers here
  }
  const { RedisContainer } = await import('@testcontainers/redis');
  const container = await new RedisContainer('redis:7-alpine').start();
  return {
    url: container.getConnectionUrl(),
    origin: 'testcontainers',
    stop: async () => {
      await container.stop();
    },
  };
}

/**
 * Docker (testcontainers) when an engine answers; else `REDIS_URL`; else 127.0.0.1:6379;
 * else a `redis-server` started here on a free port.
 */
export async function acquireRedis(env: NodeJS.ProcessEnv = process.env): Promise<RedisSource> {
  const containerised = await fromTestcontainers();
  if (containerised) return containerised;
  const none = async () => undefined;
  if (env.REDIS_URL && (await answers(env.REDIS_URL))) {
    return { url: env.REDIS_URL, origin: 'REDIS_URL', stop: none };
  }
  const local = 'redis://127.0.0.1:6379';
  if (await answers(local)) return { url: local, origin: 'localhost', stop: none };
  return startPrivateRedis();
}
