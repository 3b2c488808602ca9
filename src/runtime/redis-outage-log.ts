import type { Logger } from '../observability/logger.ts';

/** Anything that emits `error` (and an ioredis client also `ready`). */
interface Emitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}
interface Connection extends Emitter {
  on(event: 'error' | 'ready', listener: (err: Error) => void): unknown;
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND']);

function isConnectionError(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    (typeof code === 'string' && CONNECTION_CODES.has(code)) ||
    /connection is closed|stream isn't writeable|reached the max retries/i.test(err.message)
  );
}

const summary = (err: Error) => ({
  name: err.name,
  message: err.message,
  code: (err as { code?: unknown }).code,
});

/**
 * JSON log lines for Redis trouble instead of raw `console.error` output (what BullMQ and ioredis
 * print for an `error` nobody listens to): one error when Redis goes away, one line when it is
 * back, whatever number of reconnect attempts and worker errors come in between. Other errors of
 * the workers and queues are logged as they come.
 */
export function logRedisOutages(
  logger: Logger,
  connection: Connection,
  others: readonly { name: string; emitters: readonly Emitter[] }[],
): void {
  let down = false;
  const lost = (err: Error) => {
    if (down) return;
    down = true;
    logger.error({ err: summary(err) }, 'redis unreachable: the workers wait for it');
  };
  connection.on('error', lost);
  connection.on('ready', () => {
    if (!down) return;
    down = false;
    logger.info('redis reachable again');
  });
  for (const { name, emitters } of others) {
    for (const emitter of emitters) {
      emitter.on('error', (err) => {
        if (isConnectionError(err)) lost(err);
        else logger.warn({ queue: name, err: summary(err) }, 'queue error');
      });
    }
  }
}
