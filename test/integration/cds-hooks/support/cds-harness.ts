import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { Registry } from 'prom-client';
import pino from 'pino';
import { App } from '../../../../src/app/compose-app.ts';
import type { Config } from '../../../../src/config/config-schema.ts';
import { ChangeDetector } from '../../../../src/delivery/change-detector.ts';
import { DeliveryRouter } from '../../../../src/delivery/delivery-router.ts';
import type { ResultEvent } from '../../../../src/interface/result-event.ts';
import type { PatientAdmin } from '../../../../src/privacy/patient-admin.ts';
import { requestConnection } from '../../../../src/queues/redis-connections.ts';
import type { RedisClient } from '../../../../src/queues/redis-client.ts';
import { isolatedIngestConfig } from '../../../support/ingest-test-config.ts';
import { testRedisUrl } from '../../../support/redis.ts';

export const BASE_URL = 'https://cds.example.test';
export const LOCAL_ISSUER = 'https://ehr-local.example.test';
export const REMOTE_ISSUER = 'https://ehr-remote.example.test';

/** A signing key of an EHR: its private key and its public JWK. */
export interface EhrKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function ehrKey(kid: string = randomUUID()): Promise<EhrKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES384');
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES384', use: 'sig' },
  };
}

/** A CDS Hooks JWT as an EHR signs it; `over` changes its claims. */
export async function signJwt(
  key: EhrKey,
  issuer: string,
  audience: string,
  over: { exp?: number; iat?: number; jti?: string } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1_000);
  return new SignJWT({ jti: over.jti ?? randomUUID() })
    .setProtectedHeader({ alg: 'ES384', kid: key.kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(over.iat ?? now)
    .setExpirationTime(over.exp ?? now + 120)
    .sign(key.privateKey);
}

/** A JWKS served over HTTP on a free port (the remote issuer's `jwks_url`). */
export async function jwksServer(keys: JWK[]): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface CdsHarness {
  url: string;
  app: FastifyInstance;
  composed: App;
  config: Config;
  inspect: RedisClient;
  prefix: string;
  registry: Registry;
  router: DeliveryRouter;
  admin: PatientAdmin;
  localKey: EhrKey;
  remoteKey: EhrKey;
  /** Registers a patient (the crosswalk entry ingest makes) and answers its service id. */
  patient(localId: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The ingest app built by the composition root with `cds_hooks` on, listening on a free port:
 * one client with an inline JWKS, one with a JWKS URL served by a real local HTTP server; results
 * go through the real delivery router, whose keeper is the app's kept results.
 */
export async function startCdsHarness(
  cds: Partial<Config['cds_hooks']> = {},
  over: (config: Config) => Config = (c) => c,
): Promise<CdsHarness> {
  const { env, loaded } = await isolatedIngestConfig('cds-ingest-token-0123456789', {
    ADMIN_TOKENS: 'cds-admin-token-0123456789',
  });
  const localKey = await ehrKey();
  const remoteKey = await ehrKey();
  const jwks = await jwksServer([remoteKey.jwk]);
  const config = over({
    ...loaded,
    cds_hooks: {
      ...loaded.cds_hooks,
      enabled: true,
      base_url: BASE_URL,
      clients: [
        {
          issuer: LOCAL_ISSUER,
          jwks: { keys: [{ ...localKey.jwk, kty: 'EC' }] },
          fhir_servers: [],
        },
        { issuer: REMOTE_ISSUER, jwks_url: jwks.url, fhir_servers: [] },
      ],
      ...cds,
    },
  });
  const redis = requestConnection(testRedisUrl(), 'cds-test');
  if (redis.status !== 'ready') await once(redis, 'ready');
  const registry = new Registry();
  const logger = pino({ level: 'silent' });
  const composed = App.compose(config, logger, { redis, registry });
  const queues = composed.queriesQueues(redis);
  await Promise.all(queues.map((queue) => queue.waitUntilReady()));
  const patientAdmin = composed.patientAdmin(queues);
  const app = await composed.ingestApp({ ...composed.ingestParts(), admin: patientAdmin.admin });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const router = new DeliveryRouter({
    channels: [],
    changes: new ChangeDetector({ redis, prefix: composed.partitions, ignoreFields: [] }),
    keeper: composed.keptResults(),
    logger,
  });
  return {
    url,
    app,
    composed,
    config,
    inspect: env.redis,
    prefix: env.prefix,
    registry,
    router,
    admin: patientAdmin.admin,
    localKey,
    remoteKey,
    patient: async (localId) => (await composed.crosswalk.resolve(localId)).patientServiceId,
    async close() {
      await app.close();
      await patientAdmin.close();
      for (const queue of queues) await queue.close();
      await jwks.close();
      await redis.quit();
      await env.cleanup();
    },
  };
}

/** A completed concordance result of a patient, carrying `marker` in its synthesis. */
export function concordanceEvent(
  patientServiceId: string,
  category: string,
  marker: string,
  verdict: 'concordant' | 'discordant' = 'discordant',
  over: Partial<ResultEvent> = {},
): ResultEvent {
  return {
    id: randomUUID(),
    type: 'concordance.completed',
    created_at: new Date().toISOString(),
    patient_id: `local-${marker}`,
    patient_service_id: patientServiceId,
    ccsr_category: category,
    record_version: 1,
    triggered_by: { event_ids: [], count: 1, first_update_at: null, last_update_at: null },
    remote_job_id: `job-${marker}`,
    status: 'completed',
    concordance: {
      summary: `Synthesis ${marker}`,
      recommendations: [{ title: `Recommendation ${marker}`, verdict, rationale: marker }],
    },
    error: null,
    ...over,
  };
}

/** A `patient-view` request body for the FHIR Patient `patientId`. */
export function patientView(patientId: string, extra: Record<string, unknown> = {}) {
  return {
    hook: 'patient-view',
    hookInstance: randomUUID(),
    context: { userId: 'Practitioner/example', patientId },
    ...extra,
  };
}
