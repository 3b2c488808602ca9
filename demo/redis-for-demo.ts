import { redisAnswers, startPrivateRedis, type LocalRedis } from '../tools/local-redis.ts';

const HOW_TO_GET_REDIS = `The demo needs Redis 7 and found none: REDIS_URL is not set or does not answer, and no
redis-server is installed to start a private one. Either install Redis (Debian/Ubuntu:
"sudo apt-get install redis-server"; macOS: "brew install redis") and run the demo again, or
start one anywhere you like (for example "docker run -p 6379:6379 redis:7") and run
"REDIS_URL=redis://127.0.0.1:6379 npm run demo".`;

/** `REDIS_URL` if it answers; else a private `redis-server`; else `undefined`, after saying how to get one. */
export async function redisForDemo(env = process.env): Promise<LocalRedis | undefined> {
  if (env.REDIS_URL !== undefined && (await redisAnswers(env.REDIS_URL))) {
    return { url: env.REDIS_URL, origin: 'REDIS_URL', stop: async () => undefined };
  }
  try {
    return await startPrivateRedis();
  } catch {
    process.stderr.write(`${HOW_TO_GET_REDIS}\n`);
    return undefined;
  }
}
