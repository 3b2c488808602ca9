import { once } from 'node:events';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { RedisClient } from '../../../../src/queues/redis-client.ts';
import { Registry } from 'prom-client';
import type { Config } from '../../../../src/config/config-schema.ts';
import { loadConfig } from '../../../../src/config/load-config.ts';
import type { Crosswalk } from '../../../../src/identity/crosswalk.ts';
import { createLogger } from '../../../../src/observability/logger.ts';
import type { PatientAdmin } from '../../../../src/privacy/patient-admin.ts';
import { App } from '../../../../src/app/compose-app.ts';
import { generateCrosswalkSecret } from '../../../../src/identity/crosswalk-keys.ts';
import { requestConnection } from '../../../../src/queues/redis-connections.ts';
import type { RecordStore } from '../../../../src/records/record-store.ts';
import { isolatedRedis, testRedisUrl } from '../../../support/redis.ts';
import { LocalFhirServer } from './local-fhir-server.ts';

export const TOKEN = 'fhir-ingest-test-token-0123456789';
export const FHIR_TOKEN = 'fhir-server-token-abcdef';
export const FHIR_JSON = {
  authorization: `Bearer ${TOKEN}`,
  'content-type': 'application/fhir+json',
};

export interface FhirHarness {
  app: FastifyInstance;
  config: Config;
  fhir: LocalFhirServer;
  inspect: RedisClient;
  prefix: string;
  crosswalk: Crosswalk;
  records: RecordStore;
  registry: Registry;
  /** Purges what a FHIR Patient delete names (absent with `admin: false`). */
  admin: PatientAdmin | undefined;
  logLines: string[];
  /** Every key under the test's prefix with its value, to show that nothing changed. */
  snapshot(): Promise<Map<string, string>>;
  close(): Promise<void>;
}

const ignore = (): void => undefined;

/**
 * The ingest app built by the composition root as `ingest` builds it, on the test's own Redis
 * prefix with a fresh crosswalk key, with `fhir.base_url` pointing at a {@link LocalFhirServer}
 * on a real socket.
 */
export async function startFhirHarness(
  options: {
    patientIdentifierSystem?: string;
    /** null: no `fhir.base_url`. */
    fhirBaseUrl?: null;
    /** `FHIR_TOKEN` the app sends. @defaultValue the one the local server accepts */
    fhirToken?: string;
    /** Where the app's request connections point. @defaultValue the test Redis */
    redisUrl?: string;
    /** `fhir.rest_hooks`. @defaultValue none */
    restHooks?: Config['fhir']['rest_hooks'];
    /** false: no patient admin (a Patient delete answers 503). @defaultValue true */
    admin?: boolean;
    /** Map SNOMED CT / ICD-9-CM problems as the ingest process does (`terminology.*`). */
    terminology?: boolean;
    /** More environment for `loadConfig` (e.g. `MRN_FHIR_SYSTEMS`). @defaultValue none */
    env?: Record<string, string>;
  } = {},
): Promise<FhirHarness> {
  const env = await isolatedRedis();
  const fhir = await new LocalFhirServer(FHIR_TOKEN).start();
  const loaded = loadConfig({
    env: {
      INGEST_TOKENS: TOKEN,
      REDIS_PREFIX: env.prefix,
      LOG_LEVEL: 'trace',
      ...(options.fhirBaseUrl === null ? {} : { FHIR_BASE_URL: fhir.baseUrl }),
      FHIR_TOKEN: options.fhirToken ?? FHIR_TOKEN,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      ...options.env,
    },
  });
  const config: Config = {
    ...loaded,
    fhir: {
      ...loaded.fhir,
      patient_identifier_system: options.patientIdentifierSystem ?? null,
      rest_hooks: options.restHooks ?? [],
    },
    // Without `terminology`, no source: problems are taken as coded.
    ...(options.terminology === true
      ? {}
      : { terminology: { ...loaded.terminology, sources: [] } }),
  };
  const url = options.redisUrl ?? testRedisUrl();
  const redis = requestConnection(url, 'fhir-test');
  redis.on('error', ignore);
  const reachable = options.redisUrl === undefined;
  if (reachable) {
    if (redis.status !== 'ready') await once(redis, 'ready');
  }

  const prefix = config.redis.prefix;
  const registry = new Registry();
  const logLines: string[] = [];
  const logger = createLogger({
    name: 'ingest',
    level: 'trace',
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    }),
  });
  // Built as `ingest` builds it (src/runtime/run-ingest.ts), on the test's connection.
  const composed = App.compose(config, logger, { redis, registry });
  const { crosswalk, records } = composed;
  const queues = composed.queriesQueues(redis);
  for (const queue of queues) queue.on('error', ignore);
  if (reachable) await Promise.all(queues.map((q) => q.waitUntilReady()));
  const patientAdmin = options.admin === false ? undefined : composed.patientAdmin(queues);
  const admin = patientAdmin?.admin;
  const app = await composed.ingestApp({
    ...composed.ingestParts(),
    ...(admin === undefined ? {} : { admin }),
  });
  await app.ready();

  return {
    app,
    config,
    fhir,
    inspect: env.redis,
    prefix,
    crosswalk,
    records,
    registry,
    admin,
    logLines,
    async snapshot() {
      const out = new Map<string, string>();
      for (const key of await env.redis.keys(`${prefix}*`)) {
        const type = await env.redis.type(key);
        if (type === 'hash') out.set(key, JSON.stringify(await env.redis.hgetall(key)));
        else if (type === 'string') out.set(key, (await env.redis.get(key)) ?? '');
        else if (type === 'zset')
          out.set(key, JSON.stringify(await env.redis.zrange(key, '0', '-1')));
        else out.set(key, type);
      }
      return out;
    },
    async close() {
      await app.close();
      await patientAdmin?.close();
      await Promise.all(queues.map((queue) => queue.close()));
      await fhir.close();
      redis.disconnect();
      await env.cleanup();
    },
  };
}
