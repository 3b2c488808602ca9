import type { Config } from '../../config/config-schema.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { describePersistence, redisPersistence } from '../../queues/redis-persistence.ts';

/** How long `config check` waits for Redis's answer before saying it cannot tell. */
const ANSWER_WITHIN_MS = 5_000;

/**
 * The line `config check` prints about Redis's persistence (src/queues/redis-persistence.ts):
 * `warning: redis: …` when a server keeps nothing on disk, `redis: …` otherwise. Never a problem
 * of the configuration: a Redis that does not answer is "cannot tell".
 */
export async function redisPersistenceLine(config: Pick<Config, 'redis'>): Promise<string> {
  const redis = requestConnection(config.redis, 'cw-config-check', {
    enableOfflineQueue: true,
    lazyConnect: true,
  });
  redis.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ANSWER_WITHIN_MS);
  });
  try {
    // PING first: a cluster client knows its masters once it answered.
    const asked = redis.ping().then(() => redisPersistence(redis));
    asked.catch(() => undefined);
    const report = await Promise.race([asked, late]);
    if (report === undefined) {
      return 'redis: cannot tell whether Redis keeps its data on disk (Redis did not answer)';
    }
    return `${report.verdict === 'none' ? 'warning: redis' : 'redis'}: ${describePersistence(report)}`;
  } catch {
    return 'redis: cannot tell whether Redis keeps its data on disk (Redis did not answer)';
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}
