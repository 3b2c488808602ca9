import { Redis, type RedisOptions } from 'ioredis';

/**
 * A connection for BullMQ workers and blocking commands: it waits for Redis to come back rather
 * than failing commands (BullMQ requires `maxRetriesPerRequest: null` here).
 */
export function workerConnection(url: string, name: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, connectionName: name });
}

/** {@link requestConnection}'s default command timeout (`redis.command_timeout_ms`). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 2_000;

export interface RequestConnectionOptions extends RedisOptions {
  /**
   * How long a command may wait for Redis's answer before it fails ("Command timed out"); the
   * same time without any reply on a connection with commands outstanding drops the socket, so
   * that the connection is made again rather than kept with unanswered commands in its pipeline.
   * @defaultValue {@link DEFAULT_COMMAND_TIMEOUT_MS}
   */
  commandTimeoutMs?: number;
}

/**
 * A connection for request paths (ingest): commands fail fast while Redis is unreachable
 * (refused: at once; hung, e.g. SIGSTOPped or behind a proxy that drops packets: after the
 * command timeout), so that a request can be answered 503 instead of hanging.
 */
export function requestConnection(
  url: string,
  name: string,
  { commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS, ...extra }: RequestConnectionOptions = {},
): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: commandTimeoutMs,
    socketTimeout: commandTimeoutMs,
    // A command the caller was already told failed (503, no ACK) is never sent again later.
    autoResendUnfulfilledCommands: false,
    connectionName: name,
    ...extra,
  });
}

/** True when Redis answers PING within `timeoutMs` (a worker connection would otherwise wait). */
export async function redisAnswers(redis: Redis, timeoutMs = 1_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([redis.ping().then((answer) => answer === 'PONG'), late]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
