import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { RedisClient } from '../../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import type { Config } from '../../config/config-schema.ts';
import { fhirPatientKeySystems } from '../../config/patient-key.ts';
import type { Crosswalk } from '../../identity/crosswalk.ts';
import type { PresetStore } from '../../presets/preset-store.ts';
import type { UpdateCommitter } from '../update-committer.ts';
import type { RecordStore } from '../../records/record-store.ts';
import { ClinicalUpdates } from '../clinical-updates.ts';
import { UnsupportedMediaTypeError } from '../errors/unsupported-media-type-error.ts';
import { isRedisUnavailable } from '../redis-failure.ts';
import { EventTracker } from './event-tracker.ts';
import { FhirClient } from './fhir-client.ts';
import {
  BUNDLE_MODE_TAG_SYSTEM,
  FhirIngest,
  WholeBundleSchema,
  type BundleMode,
  type ClinicalUpdater,
  type PatientDeleter,
} from './fhir-ingest.ts';
import { FhirMetrics } from './fhir-metrics.ts';
import { FeedTrace } from '../feed-trace.ts';
import { installFhirTrace } from './fhir-trace.ts';
import { NOTIFICATION_BUNDLE_TYPES } from './notification.ts';
import { RestHookCursor } from './rest-hook-cursor.ts';
import { restHookRoutes } from './rest-hook-routes.ts';
import type { PatientAdmin } from '../../privacy/patient-admin.ts';
import { UnknownPatientError } from '../../privacy/unknown-patient-error.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import { errorResponse, errorResponses, FHIR_UNAVAILABLE } from '../openapi/error-responses.ts';
import { FHIR_BUNDLE_EXAMPLE, FHIR_NOTIFICATION_EXAMPLE } from '../openapi/request-examples.ts';
import { documentedBody } from '../openapi/ingest-openapi.ts';
import { FHIR_OK, FhirBundleAnswerSchema } from '../schemas/answer-schemas.ts';
import { FHIR_JSON_TYPES } from './fhir-resource.ts';
import { NotificationBundleSchema } from './notification.ts';

export interface FhirRouteOptions {
  config: Pick<Config, 'fhir' | 'presets' | 'redis'> &
    Partial<Pick<Config, 'outbound'>> & { identity: Pick<Config['identity'], 'patient_key'> };
  /** The request connection. */
  redis: RedisClient;
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
  /** Purges patients a FHIR Patient delete names. @defaultValue none: such deletes answer 503 */
  admin?: PatientAdmin | undefined;
}

/** The audit actor of purges a FHIR Patient delete makes. */
export const FHIR_AUDIT_ACTOR = 'fhir';

/** `PatientAdmin.purge` as a FHIR delete uses it: audited as actor `fhir`. */
function patientDeleter(admin: PatientAdmin | undefined): PatientDeleter | undefined {
  if (admin === undefined) return undefined;
  return {
    async purge(localId) {
      try {
        await admin.purge(localId, { actor: FHIR_AUDIT_ACTOR });
        return 'purged';
      } catch (error) {
        if (error instanceof UnknownPatientError) return 'unknown';
        throw error;
      }
    },
  };
}

const MODES: readonly BundleMode[] = ['merge', 'replace'];

/** `?mode` as the description shows it ({@link modeOf} checks it). */
const BundleQuerySchema = z.object({
  mode: z
    .enum(['merge', 'replace'])
    .optional()
    .meta({
      description:
        '`merge` updates the resources the Bundle carries and leaves the rest of each record ' +
        'alone; `replace` makes each record exactly the Bundle’s resources. Absent: the ' +
        `Bundle's \`meta.tag\` of system \`${BUNDLE_MODE_TAG_SYSTEM}\`, else \`merge\`.`,
      examples: ['merge'],
    }),
});

/** `?mode=merge|replace` (absent: the Bundle's `meta.tag`, else merge). */
function modeOf(query: unknown): BundleMode | undefined {
  const mode = (query as { mode?: unknown } | null)?.mode;
  if (mode === undefined) return undefined;
  if (typeof mode === 'string' && (MODES as readonly string[]).includes(mode)) {
    return mode as BundleMode;
  }
  throw new RequestValidationError([
    { loc: ['query', 'mode'], msg: 'mode is merge or replace', type: 'enum' },
  ]);
}

/**
 * JSON, and an empty body as no body (a classic rest-hook ping may carry a JSON content type and
 * no content): the routes say what an absent body means.
 */
function lenientJson(app: Parameters<FastifyPluginAsync>[0]) {
  const strict = app.getDefaultJsonParser('error', 'error');
  return (
    request: FastifyRequest,
    body: string | Buffer,
    done: (err: Error | null, body?: unknown) => void,
  ) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    strict(request, typeof body === 'string' ? body : body.toString('utf8'), done);
  };
}

/** The media types the FHIR routes accept (an R4 server sends `application/fhir+json`). */
export const FHIR_MEDIA_TYPES: ReadonlySet<string> = new Set(FHIR_JSON_TYPES);

/** Topic-based (R4 backport, R4B, R5) subscription notifications are posted here. */
export const FHIR_NOTIFICATIONS_ROUTE = '/v1/fhir/notifications';

/** The answers every FHIR body route may give besides its success. */
const FHIR_ERRORS = {
  ...errorResponses(400, 413, 415, 422),
  503: errorResponse(503, FHIR_UNAVAILABLE),
};

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
  const trace = new FeedTrace({
    feed: 'fhir',
    registry: options.registry,
    committer: options.committer,
    logger: app.log as unknown as Logger,
  });
  const client = options.client ?? FhirClient.fromConfig(config);
  const ingest = new FhirIngest({
    updates,
    tracker: new EventTracker({ redis: options.redis, prefix: config.redis.prefix }),
    client,
    patientIdentifierSystems: fhirPatientKeySystems(config),
    metrics: new FhirMetrics(options.registry),
    patients: patientDeleter(options.admin),
    trace,
  });
  // Every FHIR route's message (notifications, Bundles, rest-hooks), before their registration.
  installFhirTrace(app, trace);

  // FHIR's own media type, parsed as JSON (in this plugin's scope only); empty bodies pass.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, lenientJson(app));
  app.addContentTypeParser('application/fhir+json', { parseAs: 'string' }, lenientJson(app));

  await app.register(restHookRoutes, {
    hooks: config.fhir.rest_hooks,
    ingest,
    client,
    cursor: new RestHookCursor({ redis: options.redis, prefix: config.redis.prefix }),
  });

  app.post(
    FHIR_NOTIFICATIONS_ROUTE,
    {
      onRequest: requireFhirJson,
      schema: {
        operationId: 'postFhirNotification',
        summary: 'A FHIR subscription notification (R4 backport, R4B, R5)',
        description:
          'A Bundle (`history` in the R4 backport and R4B, `subscription-notification` in R5) ' +
          'whose first entry is the subscription status (`Parameters` or `SubscriptionStatus`). Handshakes and heartbeats are acknowledged; event ' +
          'notifications are applied, id-only ones after reading the resources from ' +
          '`fhir.base_url`; a gap in event numbers is recovered through `$events`. Answered once ' +
          'durable.',
        tags: ['fhir'],
        documented: {
          body: documentedBody(
            FHIR_JSON_TYPES,
            NotificationBundleSchema.meta({ examples: [FHIR_NOTIFICATION_EXAMPLE] }),
          ),
        },
        response: { 200: FHIR_OK, ...FHIR_ERRORS },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const log = request.log as unknown as Logger;
      try {
        const summary = await ingest.handleNotification(request.body, log);
        log.info(summary, 'fhir notification');
      } catch (error) {
        const type = (request.body as { type?: unknown } | null)?.type;
        const bundle_type = (NOTIFICATION_BUNDLE_TYPES as readonly unknown[]).includes(type)
          ? type
          : undefined;
        log.info({ bundle_type, outcome: outcomeOf(error) }, 'fhir notification');
        throw error;
      }
      return reply.code(200).send({ status: 'ok' });
    },
  );

  app.post(
    '/v1/fhir/Bundle',
    {
      onRequest: requireFhirJson,
      schema: {
        operationId: 'postFhirBundle',
        summary: 'A Bundle of one or more patients’ resources',
        description:
          'A `collection`, `transaction`, `batch`, `searchset` or `document` Bundle, split per ' +
          'patient and applied in one commit per patient. Everything is validated before the ' +
          'first patient is applied.',
        tags: ['fhir'],
        documented: {
          querystring: BundleQuerySchema,
          body: documentedBody(
            FHIR_JSON_TYPES,
            WholeBundleSchema.meta({ examples: [FHIR_BUNDLE_EXAMPLE] }),
          ),
        },
        response: {
          202: FhirBundleAnswerSchema.meta({ description: 'Applied.' }),
          ...FHIR_ERRORS,
        },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const bundleType = (request.body as { type?: unknown } | null)?.type;
      const bundle_type = typeof bundleType === 'string' ? bundleType.slice(0, 32) : undefined;
      let result;
      try {
        result = await ingest.applyBundle(request.body, modeOf(request.query));
      } catch (error) {
        request.log.info({ bundle_type, outcome: outcomeOf(error) }, 'fhir bundle');
        throw error;
      }
      request.log.info(
        {
          bundle_type,
          mode: result.mode,
          patients: result.patients.length,
          resources: result.resources,
          items: result.items,
          outcome: 'applied',
        },
        'fhir bundle',
      );
      const patients = result.patients.map((p) => ({
        patient_service_id: p.patientServiceId,
        version: p.version,
        changed: p.changed,
      }));
      const [only] = patients;
      return reply.code(202).send({
        mode: result.mode,
        patients,
        // One patient: also at the top level, as before Bundles could hold several.
        ...(patients.length === 1 && only !== undefined
          ? { patient_service_id: only.patient_service_id, version: only.version }
          : {}),
      });
    },
  );
};

function outcomeOf(error: unknown): string {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  if (status === 422) return 'rejected';
  if (status === 503 || isRedisUnavailable(error)) return 'unavailable';
  return 'failed';
}
