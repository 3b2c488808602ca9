import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisTlsConfig } from '../config/config-schema.ts';
import { trustedCas } from '../connections/trusted-cas.ts';
import type { RedisClient } from './redis-client.ts';

/**
 * Where Redis is: the URL (`redis://` or `rediss://` for TLS, with an ACL user and password as
 * `rediss://user:password@host:port`), the TLS files (`redis.tls`) and, for a Redis Cluster, its
 * nodes (`redis.cluster_nodes`, `host:port`). `config.redis` is one.
 */
export interface RedisEndpoint {
  url: string;
  tls?: RedisTlsConfig | undefined;
  /**
   * Some nodes of a Redis Cluster (`REDIS_CLUSTER_NODES`): when not empty, the connection is an
   * ioredis `Cluster` that finds the others, and the URL gives only the credentials and TLS.
   */
  cluster_nodes?: readonly string[] | undefined;
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

/** `host:port` (IPv6 in brackets) as ioredis takes a cluster node. */
export function clusterNode(text: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text.trim());
  if (match === null) throw new RangeError(`not a host:port: ${text}`);
  return { host: match[1] as string, port: Number(match[2]) };
}

/**
 * What a cluster's node connections take from the URL, since ioredis reads the URL only for a
 * single server: the ACL user and password, and TLS for `rediss://` (see {@link redisTlsOptions}).
 */
export function clusterNodeOptions(endpoint: RedisEndpoint): RedisOptions {
  const url = new URL(endpoint.url);
  return {
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
    ...redisTlsOptions(endpoint),
  };
}

/**
 * A connection to the endpoint: a single server, or an ioredis `Cluster` when the endpoint names
 * cluster nodes. `options` apply to each server connection; `cluster` to the cluster client.
 */
function connect(
  endpoint: RedisEndpoint,
  options: RedisOptions,
  cluster: ClusterOptions = {},
): RedisClient {
  const nodes = endpoint.cluster_nodes ?? [];
  if (nodes.length === 0)
    return new Redis(endpoint.url, { ...redisTlsOptions(endpoint), ...options });
  return new Cluster(nodes.map(clusterNode), {
    ...cluster,
    redisOptions: { ...clusterNodeOptions(endpoint), ...options },
  });
}

/**
 * A connection for BullMQ workers and blocking commands: it waits for Redis to come back rather
 * than failing commands (BullMQ requires `maxRetriesPerRequest: null` here). A Redis Cluster
 * connection when the endpoint names cluster nodes.
 */
export function workerConnection(redis: string, name: string): Redis;
export function workerConnection(redis: string | RedisEndpoint, name: string): RedisClient;
export function workerConnection(redis: string | RedisEndpoint, name: string): RedisClient {
  return connect(endpointOf(redis), { maxRetriesPerRequest: null, connectionName: name });
}

/**
 * A connection for the workers' own commands (query state, polls, records, deliveries' change
 * checks), apart from BullMQ's: like {@link workerConnection} it waits for Redis to come back,
 * and it pipelines automatically (ioredis `enableAutoPipelining`): the commands issued in one tick
 * of the event loop (a batch of polls, many queries at once) go out in one write. Kept apart
 * because BullMQ's connection carries its scripts, which every pipeline of that connection copies.
 */
export function commandConnection(redis: string | RedisEndpoint, name: string): RedisClient {
  return connect(
    endpointOf(redis),
    { maxRetriesPerRequest: null, connectionName: name, enableAutoPipelining: true },
    { enableAutoPipelining: true },
  );
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
 * command timeout), so that a request can be answered 503 instead of hanging. On a Redis Cluster
 * the cluster client fails fast the same way (no offline queue) and each node connection has the
 * timeouts; `enableOfflineQueue: true` in `extra` (the CLI) queues commands until it is ready.
 */
export function requestConnection(
  redis: string,
  name: string,
  options?: RequestConnectionOptions,
): Redis;
export function requestConnection(
  redis: string | RedisEndpoint,
  name: string,
  options?: RequestConnectionOptions,
): RedisClient;
export function requestConnection(
  redis: string | RedisEndpoint,
  name: string,
  { commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS, ...extra }: RequestConnectionOptions = {},
): RedisClient {
  const endpoint = endpointOf(redis);
  const nodes = endpoint.cluster_nodes ?? [];
  const failFast: RedisOptions = {
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: commandTimeoutMs,
    socketTimeout: commandTimeoutMs,
    // A command the caller was already told failed (503, no ACK) is never sent again later.
    autoResendUnfulfilledCommands: false,
    connectionName: name,
  };
  if (nodes.length > 0) {
    // These belong to the cluster client: it is what connects (and reconnects) as a whole.
    const { enableOfflineQueue = false, lazyConnect, retryStrategy, ...rest } = extra;
    return connect(
      endpoint,
      // A node connection is made on its first command: it queues until connected, and the
      // cluster client (no offline queue) is what fails fast while the cluster is not ready.
      { ...failFast, ...rest },
      {
        enableOfflineQueue,
        ...(lazyConnect === undefined ? {} : { lazyConnect }),
        ...(retryStrategy === undefined ? {} : { clusterRetryStrategy: retryStrategy }),
      },
    );
  }
  return new Redis(endpoint.url, {
    ...redisTlsOptions(endpoint),
    enableOfflineQueue: false,
    ...failFast,
    ...extra,
  });
}

/**
 * The connection a request path's BullMQ queues use. One Redis server: the request connection
 * itself. A Redis Cluster: a copy of it that queues commands until the cluster is ready, because
 * BullMQ takes a cluster client's `connect` state for ready and sends its first command before the
 * slots are known, which a client without an offline queue refuses. The request paths' own
 * commands keep failing fast on the request connection; close the copy with it (`owned`).
 */
export function queueConnectionFor(request: RedisClient): {
  connection: RedisClient;
  owned: boolean;
} {
  if (!request.isCluster) return { connection: request, owned: false };
  return {
    connection: (request as Cluster).duplicate(undefined, { enableOfflineQueue: true }),
    owned: true,
  };
}

/** True when Redis answers PING within `timeoutMs` (a worker connection would otherwise wait). */
export async function redisAnswers(redis: RedisClient, timeoutMs = 1_000): Promise<boolean> {
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
