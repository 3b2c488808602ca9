import type { Tracer } from '@opentelemetry/api';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
} from 'fastify';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { loadCcsrTables } from '../ccsr/ccsr-tables.ts';
import type { KeptResults } from '../cds/kept-results.ts';
import type { IngestSlice } from '../config/config-slices.ts';
import { fhirPatientKeySystems } from '../config/patient-key.ts';
import type { Crosswalk } from '../identity/crosswalk.ts';
import type { PresetStore } from '../presets/preset-store.ts';
import type { PatientAdmin } from '../privacy/patient-admin.ts';
import type { UpdateCommitter } from './update-committer.ts';
import type { RecordStore } from '../records/record-store.ts';
import { handleClientError } from './client-error-handler.ts';
import { ClinicalUpdates } from './clinical-updates.ts';
import type { ProblemTerminology } from '../terminology/problem-terminology.ts';
import { createErrorHandler } from './error-handler.ts';
import { BadRequestError } from './errors/bad-request-error.ts';
import { NotFoundError } from './errors/not-found-error.ts';
import { installBearerAuth } from './hooks/bearer-auth.ts';
import { installIngestSpans } from './hooks/ingest-spans.ts';
import { installReadinessGate } from './hooks/readiness-gate.ts';
import { installRequestLog } from './hooks/request-log.ts';
import { installUnauthorizedLog } from './hooks/unauthorized-log.ts';
import { IngestMetrics } from './ingest-metrics.ts';
import { FeedTrace } from './feed-trace.ts';
import { ingestTls } from './ingest-tls.ts';
import { PatientLocator } from './patient-locator.ts';
import { fhirRoutes } from './fhir/fhir-routes.ts';
import { hl7v2Routes } from './hl7v2/hl7v2-routes.ts';
import { cdsHooksRoutes } from './routes/cds-hooks-routes.ts';
import { healthRoutes } from './routes/health-routes.ts';
import { patientAdminRoutes } from './routes/patient-admin-routes.ts';
import { presetRoutes } from './routes/preset-routes.ts';
import { recordUpdateBatchRoutes } from './routes/record-update-batch-routes.ts';
import { recordUpdateRoutes } from './routes/record-update-routes.ts';
import { traceRoutes } from './routes/trace-routes.ts';
import { registerIngestOpenApi } from './openapi/ingest-openapi.ts';
import { zodValidatorCompiler } from './zod-validator-compiler.ts';
import type { QueueViewSource } from './queue-view/queue-view-source.ts';
import { StartupError } from '../config/startup-error.ts';

export interface IngestDeps {
  /** The ingest's slice of the configuration; `ingest.tokens` are the accepted bearer tokens. */
  config: IngestSlice;
  /** A request connection (`requestConnection()`): fails fast while Redis is down. */
  redis: RedisClient;
  crosswalk: Crosswalk;
  records: RecordStore;
  presets: PresetStore;
  /** Applies each message in one Redis script (see `UpdateCommitter.fromConfig`). */
  committer: UpdateCommitter;
  /** Request outcomes only: no patient id, record content or token is ever logged. */
  logger: Logger;
  /** Maps problem codes to ICD-10-CM (`ProblemTerminology.fromConfig`). @defaultValue none */
  terminology?: ProblemTerminology;
  /**
   * Finds each update's patient, with the process's crosswalk cache; one for every feed.
   * @defaultValue `PatientLocator.fromConfig(deps)`
   */
  locator?: PatientLocator;
  /**
   * Applies HL7 v2 and FHIR messages to the clinical records.
   * @defaultValue `ClinicalUpdates.fromDeps(deps)` with the locator
   */
  updates?: ClinicalUpdates;
  /**
   * Where `/metrics` reads from and the ingest counters live.
   * @defaultValue a fresh registry with prom-client's default process metrics
   */
  metrics?: { registry: Registry };
  /**
   * Purge and opt-out (`DELETE /v1/patients/{id}`, `PUT|DELETE …/opt-out`), for tokens of
   * `config.admin.tokens` only. @defaultValue none: those routes are not served
   */
  admin?: PatientAdmin;
  /**
   * What the operator's queue view shows (`App.queueView`): served under `/admin/queues` when
   * `admin.queue_view.enabled`, which needs it. @defaultValue none
   */
  queueView?: QueueViewSource;
  /**
   * False until the process can serve (Redis reached, queue set up): every route but `/healthz`
   * and `/metrics` answers 503 until then (see `installReadinessGate`).
   * @defaultValue always ready
   */
  isReady?: () => boolean;
  /**
   * With tracing on (docs/opentelemetry.md): a server span per feed request. @defaultValue off:
   * no hook is added
   */
  tracer?: Tracer | undefined;
  /**
   * The results kept for the CDS Hooks service (`App.keptResults`): needed, and served from, when
   * `cds_hooks.enabled`. @defaultValue none
   */
  keptResults?: KeptResults | undefined;
}

/**
 * Longest route parameter fastify's router accepts. Far above the 128 characters of a patient id
 * (percent-encoded: three bytes per character), so that an over-long id reaches validation and
 * is answered 422 rather than the router's 414.
 */
const MAX_PARAM_LENGTH = 2_048;

function defaultRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * The ingest HTTP app, ready to `inject()` into or to `listen()` on (the runtime does that): record
 * updates, presets, `/healthz`, `/readyz`, `/metrics`, its OpenAPI description at `/openapi.json`
 * (docs/ingest-api.md), and the queue view when it is enabled (docs/queue-view.md, its own
 * tokens); a bearer token on all but health, readiness and metrics;
 * every error in the interface's `{detail}` format, 503 with `Retry-After` while Redis is
 * unreachable. Serve only once `redis` is ready: a request connection refuses commands (503)
 * while it is still connecting.
 */
export async function buildIngestApp(deps: IngestDeps): Promise<FastifyInstance> {
  const { config, redis, logger } = deps;
  const bodyLimitBytes = config.ingest.body_limit_bytes;
  // HTTPS when ingest.tls has a certificate and key (reloaded when they change).
  const tls = ingestTls(config.ingest.tls, logger);
  const app = Fastify({
    https: tls?.serverOptions() ?? null,
    // Upcast: the public type is the plain FastifyInstance, whatever pino's generics.
    loggerInstance: logger as FastifyBaseLogger,
    // Fastify's request lines carry the URL (patient ids in presets paths) and, for some errors,
    // the request: all of them are off, and installRequestLog writes ours with the route pattern.
    logController: new LogController({ disableRequestLogging: true }),
    // A child logger per request serializes its bindings through the redaction paths (about 4 %
    // of a JSON update's CPU, measured with the ingest bench): made only when info lines, which
    // every request writes (installRequestLog), are on; else the error handler names the request.
    childLoggerFactory: (logger, bindings, options) =>
      (logger as Logger).isLevelEnabled('info') ? logger.child(bindings, options) : logger,
    clientErrorHandler: handleClientError,
    bodyLimit: bodyLimitBytes,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A URL that cannot be decoded is answered in our format, and without logging it.
    frameworkErrors: (error, _request, reply) => {
      // Fastify's message quotes the path, patient id included: ours does not.
      const http = new BadRequestError('malformed URL', { cause: error });
      void (reply as FastifyReply).code(http.statusCode).send(http.body);
    },
  });

  if (tls !== undefined) {
    tls.attach(app.server);
    app.addHook('onClose', async () => tls.close());
  }

  // Only JSON bodies: without the text parser any other media type is refused with 415.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(zodValidatorCompiler);
  // Response schemas describe the answers (the OpenAPI document): they are sent as the handlers
  // give them, as without a schema, never checked or stripped on the way out.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.setErrorHandler(createErrorHandler({ redis, bodyLimitBytes }));
  app.setNotFoundHandler(() => {
    throw new NotFoundError('Not Found');
  });
  // First: a request the hooks below refuse (401, 503) has its span too.
  if (deps.tracer !== undefined) installIngestSpans(app, deps.tracer);
  installBearerAuth(app, config.ingest.tokens ?? [], config.admin.tokens ?? []);
  if (deps.isReady !== undefined) installReadinessGate(app, deps.isReady);
  installRequestLog(app);

  const tables = loadCcsrTables();
  const rules = config.presets.rules;
  const registry = deps.metrics?.registry ?? defaultRegistry();
  // Every 401 (ingest and admin tokens, the queue view): counted, and logged with the address.
  installUnauthorizedLog(app, { registry });
  const locator =
    deps.locator ?? PatientLocator.fromConfig({ config, crosswalk: deps.crosswalk, registry });
  // Before the routes: it describes those registered after it.
  await registerIngestOpenApi(app);
  await app.register(healthRoutes, { redis, registry });
  const recordUpdates = {
    locator,
    records: deps.records,
    committer: deps.committer,
    rules,
    tables,
    identifyingFields: config.privacy.identifying_fields,
    metrics: new IngestMetrics(registry),
    trace: new FeedTrace({ feed: 'json', registry, committer: deps.committer, logger }),
  };
  await app.register(recordUpdateRoutes, recordUpdates);
  await app.register(recordUpdateBatchRoutes, { ...recordUpdates, limits: config.ingest.batch });
  await app.register(presetRoutes, {
    crosswalk: deps.crosswalk,
    presets: deps.presets,
    rules,
    tables,
    preventEnabled: config.prevent.enabled,
  });
  if (deps.admin !== undefined) {
    // The trace first: in the description's walk its examples come before the purge.
    await app.register(traceRoutes, { admin: deps.admin });
    await app.register(patientAdminRoutes, { admin: deps.admin });
  }
  const view = config.admin.queue_view;
  if (view.enabled) {
    if (deps.queueView === undefined) {
      throw new StartupError('admin.queue_view.enabled, but the app was built without its queues');
    }
    // Loaded only when it is on: bull-board and its UI cost a start that does not serve them.
    const { QUEUE_VIEW_PATH, queueViewRoutes } = await import('./queue-view/queue-view-routes.ts');
    await app.register(queueViewRoutes, {
      prefix: QUEUE_VIEW_PATH,
      config: view,
      source: deps.queueView,
    });
  }
  if (config.cds_hooks.enabled) {
    if (deps.keptResults === undefined) {
      throw new StartupError('cds_hooks.enabled, but the app was built without its kept results');
    }
    await app.register(cdsHooksRoutes, {
      config: config.cds_hooks,
      preventEnabled: config.prevent.enabled,
      kept: deps.keptResults,
      crosswalk: deps.crosswalk,
      identitySystems: fhirPatientKeySystems(config),
      redis,
      keyPrefix: config.redis.prefix,
      registry,
      describe: (category) => tables.category(category)?.description,
    });
  }
  // One instance for both clinical feeds (and the MLLP listener, which the runtime passes in).
  const updates = deps.updates ?? ClinicalUpdates.fromDeps({ ...deps, locator });
  await app.register(fhirRoutes, { ...deps, registry, updates });
  await app.register(hl7v2Routes, { ...deps, registry, updates });
  return app;
}
