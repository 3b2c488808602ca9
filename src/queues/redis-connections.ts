import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisTlsConfig } from '../config/config-schema.ts';
import { trustedCas } from '../connections/trusted-cas.ts';

/**
 * Where Redis is: the URL (`redis://` or `rediss://` for TLS, with an ACL user and password as
 * `rediss://user:password@host:port`) and the TLS files (`redis.tls`). `config.redis` is one.
 */
export interface RedisEndpoint {
  url: string;
  tls?: RedisTlsConfig | undefined;
}

const endpointOf = (redis: string | RedisEndpoint): RedisEndpoint =>
  typeof redis === 'string' ? { url: redis } : redis;

/**
 * The options every connection of the project takes from its endpoint: for `rediss://`, the CA
 * bundle (on top of Node's roots) and the client certificate configured in `redis.tls`. ioredis
 * reads the user, password and database from the URL; BullMQ's `duplicate()` keeps all of these.
 */
export function redisTlsOptions(endpoint: RedisEndpoint): RedisOptions {
  if (!/^rediss:/i.test(endpoint.url)) return {};
  const files = endpoint.tls;
  const tls: ConnectionOptions = {};
  if (files?.ca_file) tls.ca = trustedCas(files.ca_file);
  if (files?.cert_file) tls.cert = readFileSync(files.cert_file, 'utf8');
  if (files?.key_file) tls.key = readFileSync(files.key_file, 'utf8');
  return { tls };
}

/**
 * A connection for BullMQ workers and blocking commands: it waits for Redis to come back rather
 * than failing commands (BullMQ requires `maxRetriesPerRequest: null` here).
 */
export function workerConnection(redis: string | RedisEndpoint, name: string): Redis {
  const endpoint = endpointOf(redis);
  return new Redis(endpoint.url, {
    ...redisTlsOptions(endpoint),
    maxRetriesPerRequest: null,
    connectionName: name,
  });
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
  redis: string | RedisEndpoint,
  name: string,
  { commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS, ...extra }: RequestConnectionOptions = {},
): Redis {
  const endpoint = endpointOf(redis);
  return new Redis(endpoint.url, {
    ...redisTlsOptions(endpoint),
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
