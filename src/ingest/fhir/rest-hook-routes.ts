import { createHash } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Config } from '../../config/config-schema.ts';
import { toValidationItems } from '../../interface/validation-error.ts';
import { NotFoundError } from '../errors/not-found-error.ts';
import { UnsupportedMediaTypeError } from '../errors/unsupported-media-type-error.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import type { FhirClient } from './fhir-client.ts';
import { FhirServerUnavailableError } from './fhir-errors.ts';
import type { FhirIngest } from './fhir-ingest.ts';
import type { RestHookCursor } from './rest-hook-cursor.ts';

type RestHook = Config['fhir']['rest_hooks'][number];

export interface RestHookRouteOptions {
  hooks: readonly RestHook[];
  ingest: FhirIngest;
  client: FhirClient | undefined;
  cursor: RestHookCursor;
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
}

/** Classic R4 rest-hook endpoints: `<REST_HOOK_ROUTE>/<name>` per `fhir.rest_hooks` entry. */
export const REST_HOOK_ROUTE = '/v1/fhir/rest-hook';

const Params = z.strictObject({ name: z.string() });
const ResourceParams = z.strictObject({
  name: z.string(),
  type: z.string().regex(/^[A-Z][A-Za-z]+$/, 'a FHIR resource type'),
  id: z.string().regex(/^[A-Za-z0-9\-.]{1,64}$/, 'a FHIR logical id'),
});

function parse<T>(schema: z.ZodType<T>, value: unknown, loc: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new RequestValidationError(toValidationItems(parsed.error.issues, [loc]));
  return parsed.data;
}

/** `Condition?category=x` -> the type and its search parameters. */
function splitCriteria(criteria: string): { type: string; params: Record<string, string> } {
  const [type = '', query = ''] = criteria.split('?', 2);
  return { type, params: Object.fromEntries(new URLSearchParams(query)) };
}

/**
 * Classic R4 rest-hook subscriptions at `/v1/fhir/rest-hook/<name>` (one per configured
 * `fhir.rest_hooks` entry):
 * - `POST` with an empty body (a ping, `payload` absent): the subscription's criteria are read
 *   from the FHIR server for what changed since the last read, and applied per patient (200).
 *   A body (a resource or a Bundle) is applied as it is.
 * - `PUT <endpoint>/<Type>/<id>` with the full resource (`payload: application/fhir+json`): 200.
 * - `DELETE <endpoint>/Patient/<id>`: the patient is purged as HL7 A23 does (204).
 * Resources of types we do not use are acknowledged and counted (`cw_fhir_ignored_total`).
 */
export const restHookRoutes: FastifyPluginAsync<RestHookRouteOptions> = async (app, options) => {
  const { ingest, cursor } = options;
  // A ping without payload is an empty POST; HAPI FHIR sends it as an empty form
  // (application/x-www-form-urlencoded). An empty form is no body; a form with content is refused.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer' },
    (_request, body: Buffer, done) => {
      if (body.length === 0) done(null, undefined);
      else done(new UnsupportedMediaTypeError(undefined, 'application/fhir+json'));
    },
  );
  const byName = new Map(options.hooks.map((h) => [h.name, h]));
  const now = options.now ?? (() => new Date());
  const hookOf = (name: string): RestHook => {
    const hook = byName.get(name);
    if (hook === undefined) throw new NotFoundError('no rest-hook subscription of this name');
    return hook;
  };

  async function ping(hook: RestHook): Promise<{ patients: number; read: number }> {
    if (options.client === undefined) {
      throw new FhirServerUnavailableError('fhir.base_url is not configured: cannot read');
    }
    const started = now();
    const last = await cursor.lastRead(hook.name);
    const since =
      last === undefined
        ? new Date(started.getTime() - hook.first_lookback_s * 1000)
        : new Date(last.getTime() - hook.overlap_s * 1000);
    const { type, params } = splitCriteria(hook.criteria);
    const found = await options.client.search(type, {
      ...params,
      _lastUpdated: `ge${since.toISOString()}`,
    });
    const { patients } = await ingest.applyResources(
      found,
      `fhir:rest-hook:${hook.name}:${since.toISOString()}`,
      ['fhir-server', type],
    );
    await cursor.advance(hook.name, started);
    return { patients, read: found.length };
  }

  app.post(`${REST_HOOK_ROUTE}/:name`, async (request: FastifyRequest, reply: FastifyReply) => {
    const hook = hookOf(parse(Params, request.params, 'path').name);
    const body = request.body;
    if (body === undefined || body === null || body === '') {
      const outcome = await ping(hook);
      request.log.info({ ...outcome, outcome: 'ping' }, 'fhir rest-hook');
      return reply.code(200).send({ status: 'ok' });
    }
    const b = body as { resourceType?: unknown; entry?: { resource?: unknown }[] };
    const resources = b.resourceType === 'Bundle' ? (b.entry ?? []).map((e) => e.resource) : [body];
    const digest = createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 32);
    const outcome = await ingest.applyResources(
      resources,
      `fhir:rest-hook:${hook.name}:${digest}`,
      ['body'],
    );
    request.log.info({ ...outcome, outcome: 'applied' }, 'fhir rest-hook');
    return reply.code(200).send({ status: 'ok' });
  });

  app.put(
    `${REST_HOOK_ROUTE}/:name/:type/:id`,
    async (request: FastifyRequest, reply: FastifyReply) => {
      const params = parse(ResourceParams, request.params, 'path');
      const hook = hookOf(params.name);
      const resource = request.body as { resourceType?: unknown; id?: unknown } | null;
      if (resource?.resourceType !== params.type || resource.id !== params.id) {
        throw new RequestValidationError([
          {
            loc: ['body'],
            msg: 'the resource must be the one the path names',
            type: 'value_error',
          },
        ]);
      }
      // The event id names the call by a digest only: no FHIR id leaves in a result event.
      const digest = createHash('sha256').update(JSON.stringify(resource)).digest('hex');
      const outcome = await ingest.applyResources(
        [resource],
        `fhir:rest-hook:${hook.name}:${digest.slice(0, 32)}`,
        ['body'],
      );
      request.log.info({ ...outcome, outcome: 'applied' }, 'fhir rest-hook');
      return reply.code(200).send({ status: 'ok' });
    },
  );

  app.delete(
    `${REST_HOOK_ROUTE}/:name/:type/:id`,
    async (request: FastifyRequest, reply: FastifyReply) => {
      const params = parse(ResourceParams, request.params, 'path');
      hookOf(params.name);
      const outcome = await ingest.deleteResource(params.type, params.id);
      request.log.info({ outcome: `delete_${outcome}` }, 'fhir rest-hook');
      return reply.code(204).send();
    },
  );
};
