import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import type { Config } from '../../config/config-schema.ts';
import { outboundAgents } from '../../connections/outbound-agents.ts';
import type { Crosswalk } from '../../identity/crosswalk.ts';
import type { PresetStore } from '../../presets/preset-store.ts';
import type { UpdateCommitter } from '../update-committer.ts';
import type { RecordStore } from '../../records/record-store.ts';
import { ClinicalUpdates } from '../clinical-updates.ts';
import { UnsupportedMediaTypeError } from '../errors/unsupported-media-type-error.ts';
import { isRedisUnavailable } from '../redis-failure.ts';
import { EventTracker } from './event-tracker.ts';
import { FhirClient } from './fhir-client.ts';
import { FhirIngest, type ClinicalUpdater } from './fhir-ingest.ts';
import { FhirMetrics } from './fhir-metrics.ts';

export interface FhirRouteOptions {
  config: Pick<Config, 'fhir' | 'presets' | 'redis'> & Partial<Pick<Config, 'outbound'>>;
  /** The request connection. */
  redis: Redis;
  crosswalk: Crosswalk;
  records: RecordStore;
  presets: PresetStore;
  committer: UpdateCommitter;
  /** The ingest app's registry (`cw_fhir_event_gaps_total`). */
  registry: Registry;
  /** @defaultValue a `ClinicalUpdates` on the stores above */
  updates?: ClinicalUpdater;
  /** @defaultValue built from `config.fhir` and `FHIR_TOKEN` when `fhir.base_url` is set */
  client?: FhirClient;
}

const FHIR_MEDIA_TYPES = new Set(['application/json', 'application/fhir+json']);

async function requireFhirJson(request: FastifyRequest): Promise<void> {
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type === undefined || !FHIR_MEDIA_TYPES.has(type)) throw new UnsupportedMediaTypeError();
}

/**
 * `POST /v1/fhir/notifications` (subscription notifications: 200 once durable) and
 * `POST /v1/fhir/Bundle` (a whole-patient Bundle replaces the record: 202). Logs carry counts and
 * kinds only: never resources, patient ids or names.
 */
export const fhirRoutes: FastifyPluginAsync<FhirRouteOptions> = async (app, options) => {
  const { config } = options;
  const updates = options.updates ?? ClinicalUpdates.fromDeps(options);
  const client =
    options.client ??
    (config.fhir.base_url === null
      ? undefined
      : new FhirClient({
          baseUrl: config.fhir.base_url,
          token: config.fhir.token,
          timeoutMs: config.fhir.timeout_ms,
          agent: config.outbound && outboundAgents(config.outbound),
        }));
  const ingest = new FhirIngest({
    updates,
    tracker: new EventTracker({ redis: options.redis, prefix: config.redis.prefix }),
    client,
    patientIdentifierSystem: config.fhir.patient_identifier_system,
    metrics: new FhirMetrics(options.registry),
  });

  // FHIR's own media type, parsed as JSON (in this plugin's scope only).
  app.addContentTypeParser(
    'application/fhir+json',
    { parseAs: 'string' },
    app.getDefaultJsonParser('error', 'error'),
  );

  app.post(
    '/v1/fhir/notifications',
    { onRequest: requireFhirJson },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const log = request.log as unknown as Logger;
      try {
        const summary = await ingest.handleNotification(request.body, log);
        log.info(summary, 'fhir notification');
      } catch (error) {
        log.info({ bundle_type: 'history', outcome: outcomeOf(error) }, 'fhir notification');
        throw error;
      }
      return reply.code(200).send({ status: 'ok' });
    },
  );

  app.post(
    '/v1/fhir/Bundle',
    { onRequest: requireFhirJson },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const bundleType = (request.body as { type?: unknown } | null)?.type;
      const bundle_type = typeof bundleType === 'string' ? bundleType.slice(0, 32) : undefined;
      let result;
      try {
        result = await ingest.replaceFromBundle(request.body);
      } catch (error) {
        request.log.info({ bundle_type, outcome: outcomeOf(error) }, 'fhir bundle');
        throw error;
      }
      request.log.info(
        { bundle_type, resources: result.resources, items: result.items, outcome: 'replaced' },
        'fhir bundle',
      );
      return reply
        .code(202)
        .send({ patient_service_id: result.patientServiceId, version: result.version });
    },
  );
};

function outcomeOf(error: unknown): string {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  if (status === 422) return 'rejected';
  if (status === 503 || isRedisUnavailable(error)) return 'unavailable';
  return 'failed';
}
