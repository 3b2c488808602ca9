import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { answerCall, type CdsAnswerDeps } from '../../cds/cds-answer.ts';
import { CdsMetrics } from '../../cds/cds-metrics.ts';
import { CdsPatientUnavailableError } from '../../cds/cds-patient-error.ts';
import {
  CdsFeedbackRequestSchema,
  CdsServiceParamsSchema,
  CdsServiceRequestSchema,
} from '../../cds/cds-request-schemas.ts';
import { cdsServices, discoveryAnswer } from '../../cds/cds-services.ts';
import { CdsTokenError } from '../../cds/cds-token-error.ts';
import { CdsTokenVerifier, type CdsCaller } from '../../cds/cds-token-verifier.ts';
import { JtiReplayGuard } from '../../cds/jti-replay.ts';
import type { KeptResults } from '../../cds/kept-results.ts';
import type { CdsHooksConfig } from '../../config/cds-hooks-schema.ts';
import type { Crosswalk } from '../../identity/crosswalk.ts';
import type { RedisClient } from '../../queues/redis-client.ts';
import { CdsPreconditionError } from '../errors/cds-precondition-error.ts';
import { CdsUnauthorizedError } from '../errors/cds-unauthorized-error.ts';
import { NotFoundError } from '../errors/not-found-error.ts';
import { bearerTokenOf } from '../hooks/bearer-auth.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A CDS Hooks service route: its caller is checked by the CDS Hooks JWT (cdsHooksRoutes). */
    cdsHooks?: boolean;
  }
  interface FastifyRequest {
    /** On CDS Hooks service routes: the client whose JWT was accepted. */
    cdsCaller?: CdsCaller;
  }
}

export interface CdsHooksRouteOptions {
  /** `cds_hooks.*` (enabled: the routes are registered only then). */
  config: CdsHooksConfig;
  /** `prevent.enabled`: the Prevent service is listed only with it. */
  preventEnabled: boolean;
  kept: KeptResults;
  crosswalk: Crosswalk;
  /** `fhirPatientKeySystems(config)`. */
  identitySystems: readonly string[];
  /** The request connection (the `jti`s) and the configured key prefix (`redis.prefix`). */
  redis: RedisClient;
  keyPrefix: string;
  registry: Registry;
  /** A CCSR category's description, for the cards' summaries. */
  describe?: (category: string) => string | undefined;
}

const CardSchema = z.object({
  uuid: z.string(),
  summary: z.string().max(140),
  indicator: z.enum(['info', 'warning', 'critical']),
  detail: z.string().optional(),
  source: z.object({
    label: z.string(),
    url: z.string().optional(),
    topic: z
      .object({ system: z.string(), code: z.string(), display: z.string().optional() })
      .optional(),
  }),
});
const CardsSchema = z.object({ cards: z.array(CardSchema) }).meta({ id: 'CdsCards' });
const DiscoverySchema = z
  .object({
    services: z.array(
      z.object({
        hook: z.string(),
        id: z.string(),
        title: z.string(),
        description: z.string(),
        prefetch: z.record(z.string(), z.string()),
      }),
    ),
  })
  .meta({ id: 'CdsDiscovery' });
const UNAUTHORIZED = z
  .object({ detail: z.string() })
  .meta({ description: 'The CDS Hooks JWT was refused; `detail` is its `ERR_CDS_TOKEN_*` code.' });

/**
 * The CDS Hooks 2.0 service (docs/cds-hooks.md), on the ingest app when `cds_hooks.enabled`:
 * `GET /cds-services` (discovery, no token), `POST /cds-services/{id}` (a `patient-view` call:
 * cards from the kept results) and `POST /cds-services/{id}/feedback` (counted). The two POSTs
 * take no ingest token but the EHR's JWT, checked before the body is read; a refused JWT is a 401
 * that carries nothing but its code.
 */
export const cdsHooksRoutes: FastifyPluginAsyncZod<CdsHooksRouteOptions> = async (app, options) => {
  const { config } = options;
  const base = (config.base_url ?? '').replace(/\/+$/, '');
  const services = cdsServices(config, options.preventEnabled);
  const byId = new Map(services.map((service) => [service.id, service]));
  const metrics = new CdsMetrics(options.registry);
  const verifier = new CdsTokenVerifier({
    clients: config.clients,
    replay: new JtiReplayGuard({ redis: options.redis, prefix: options.keyPrefix }),
    clockToleranceS: config.clock_tolerance_s,
    maxTokenAgeS: config.max_token_age_s,
  });
  const deps: CdsAnswerDeps = {
    crosswalk: options.crosswalk,
    kept: options.kept,
    identity: { systems: options.identitySystems, timeoutMs: config.fhir_timeout_ms },
    source: config.source,
    hideConcordant: config.hide_concordant,
    ...(options.describe === undefined ? {} : { describe: options.describe }),
  };
  const tags = ['cds-hooks'];

  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.cdsHooks !== true) return;
    const { id } = request.params as { id?: string };
    const service = `${base}/cds-services/${id ?? ''}`;
    const feedback = request.routeOptions.url?.endsWith('/feedback') === true;
    try {
      request.cdsCaller = await verifier.verify(
        bearerTokenOf(request.headers.authorization),
        feedback ? [`${service}/feedback`, service] : [service],
      );
    } catch (error) {
      if (!(error instanceof CdsTokenError)) throw error;
      metrics.call(id ?? '', 'unauthorized');
      request.authFailure = error.reason === 'missing' ? 'missing' : 'invalid';
      throw new CdsUnauthorizedError(error.code, { cause: error });
    }
  });

  app.get(
    '/cds-services',
    {
      config: { public: true },
      schema: {
        operationId: 'cdsDiscovery',
        summary: 'CDS Hooks discovery: the services offered',
        tags,
        response: { 200: DiscoverySchema.meta({ description: 'The services.' }) },
      },
    },
    async () => discoveryAnswer(services),
  );

  app.post(
    '/cds-services/:id',
    {
      config: { public: true, cdsHooks: true },
      schema: {
        operationId: 'cdsServiceCall',
        summary: 'A CDS Hooks patient-view call: the cards of the kept results',
        tags,
        params: CdsServiceParamsSchema,
        body: CdsServiceRequestSchema,
        response: { 200: CardsSchema.meta({ description: 'The cards.' }), 401: UNAUTHORIZED },
      },
    },
    async (request) => {
      const service = byId.get(request.params.id);
      if (service === undefined) throw new NotFoundError('unknown CDS service');
      const caller = request.cdsCaller as CdsCaller;
      try {
        const { cards, known } = await answerCall(service, request.body, caller.client, deps);
        metrics.call(
          service.id,
          !known ? 'unknown_patient' : cards.length > 0 ? 'cards' : 'no_cards',
        );
        return { cards };
      } catch (error) {
        if (!(error instanceof CdsPatientUnavailableError)) throw error;
        metrics.call(service.id, 'precondition_failed');
        throw new CdsPreconditionError(error.message, { cause: error });
      }
    },
  );

  app.post(
    '/cds-services/:id/feedback',
    {
      config: { public: true, cdsHooks: true },
      schema: {
        operationId: 'cdsFeedback',
        summary: 'CDS Hooks feedback on cards: counted by outcome',
        tags,
        params: CdsServiceParamsSchema,
        body: CdsFeedbackRequestSchema,
        response: { 200: z.object({}).meta({ description: 'Counted.' }), 401: UNAUTHORIZED },
      },
    },
    async (request) => {
      const service = byId.get(request.params.id);
      if (service === undefined) throw new NotFoundError('unknown CDS service');
      for (const outcome of ['accepted', 'overridden'] as const) {
        const n = request.body.feedback.filter((entry) => entry.outcome === outcome).length;
        metrics.feedback(service.id, outcome, n);
      }
      return {};
    },
  );
};
