import swagger, { type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import type { FastifyContextConfig, FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { OpenAPIV3_1 } from 'openapi-types';
import { z } from 'zod';
import { packageInfo } from '../../package-root.ts';
import { ALWAYS_OPEN } from '../hooks/readiness-gate.ts';
import { errorResponse } from './error-responses.ts';

/** Where the ingest app serves its OpenAPI description (an ingest token is required). */
export const OPENAPI_PATH = '/openapi.json';

/**
 * Request parts a handler reads and checks itself, so that no route-level schema validates them:
 * they are described in the OpenAPI document only.
 */
export interface DocumentedRequest {
  querystring?: z.ZodType;
  /**
   * The body by media type. Also for a validated body that has more than one media type (the
   * batch's NDJSON): this then replaces `body` in the description, not in the validation.
   */
  body?: { required: boolean; content: Readonly<Record<string, z.ZodType>> };
}

/** A documented body whose media types all take the same schema. */
export function documentedBody(
  types: readonly string[],
  schema: z.ZodType,
  required = true,
): NonNullable<DocumentedRequest['body']> {
  return { required, content: Object.fromEntries(types.map((type) => [type, schema])) };
}

declare module 'fastify' {
  interface FastifySchema {
    /** See {@link DocumentedRequest}. */
    documented?: DocumentedRequest;
  }
}

/** Marks an operation whose body may be absent (@fastify/swagger always writes `required: true`). */
const BODY_OPTIONAL = 'x-body-optional';

/**
 * What installBearerAuth and installReadinessGate add to a route, read from the same places: the
 * route's `config.public` / `config.admin` and the readiness gate's exemptions.
 */
function guardOf(config: FastifyContextConfig | undefined, url: string) {
  const responses: Record<number, z.ZodType> = {};
  let security: Record<string, string[]>[] | undefined;
  if (config?.public === true) {
    security = [];
  } else {
    responses[401] = errorResponse(401);
    if (config?.admin === true) {
      security = [{ adminToken: [] }];
      responses[403] = errorResponse(403);
    }
  }
  if (!ALWAYS_OPEN.has(url)) responses[503] = errorResponse(503);
  return { responses, security };
}

/**
 * fastify-type-provider-zod's transform (the zod schemas of body, params, querystring and
 * responses to JSON Schema 2020-12), with each route's security, its auth and readiness answers,
 * and the parts described by `schema.documented`.
 */
const transform: SwaggerTransform = (document) => {
  const { documented, ...schema } = document.schema ?? {};
  const { responses, security } = guardOf(document.route.config, document.url);
  const transformed = jsonSchemaTransform({
    ...document,
    schema: {
      ...schema,
      ...(documented?.querystring === undefined ? {} : { querystring: documented.querystring }),
      // The route's own wording of a status wins (a FHIR route's 503).
      response: { ...responses, ...(schema.response as object | undefined) },
      ...(security === undefined ? {} : { security }),
    },
  });
  const body = documented?.body;
  if (body === undefined) return transformed;
  const content = Object.fromEntries(
    Object.entries(body.content).map(([type, bodySchema]) => [
      type,
      { schema: jsonSchemaTransform({ ...document, schema: { body: bodySchema } }).schema.body },
    ]),
  );
  return {
    ...transformed,
    schema: {
      ...transformed.schema,
      body: { content },
      ...(body.required ? {} : { [BODY_OPTIONAL]: true }),
    },
  };
};

/** Every `$ref` in `value`, at any depth. */
function refsIn(value: unknown, found: Set<string>): void {
  if (typeof value !== 'object' || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    if (key === '$ref' && typeof child === 'string') found.add(child);
    else refsIn(child, found);
  }
}

/**
 * Only the component schemas the operations use, by name: zod's global registry holds every
 * schema given an `id` in the process, in the order their modules were loaded.
 */
function usedSchemas(document: OpenAPIV3_1.Document): Record<string, OpenAPIV3_1.SchemaObject> {
  const all = document.components?.schemas ?? {};
  const used = new Set<string>();
  const pending = new Set<string>();
  refsIn(document.paths, pending);
  for (const ref of pending) {
    const name = ref.replace('#/components/schemas/', '');
    if (used.has(name) || all[name] === undefined) continue;
    used.add(name);
    refsIn(all[name], pending);
  }
  return Object.fromEntries(
    [...used].sort().map((name) => [name, all[name] as OpenAPIV3_1.SchemaObject]),
  );
}

type Operations = Record<string, Record<string, Record<string, unknown>>>;

const transformObject: SwaggerTransformObject = (document) => {
  const openapi = jsonSchemaTransformObject(document) as OpenAPIV3_1.Document;
  for (const item of Object.values((openapi.paths ?? {}) as Operations)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!(BODY_OPTIONAL in operation)) continue;
      // The marker out, `required: false` in; the keys keep their order.
      item[method] = Object.fromEntries(
        Object.entries(operation)
          .filter(([key]) => key !== BODY_OPTIONAL)
          .map(([key, value]) => [
            key,
            key === 'requestBody' ? { ...(value as object), required: false } : value,
          ]),
      );
    }
  }
  return { ...openapi, components: { ...openapi.components, schemas: usedSchemas(openapi) } };
};

const DESCRIPTION = `The ingest HTTP API of concordance-worker: record updates (one, or many as a JSON array or NDJSON), per-patient presets, patient administration (purge, opt-out), FHIR notifications, Bundles and rest-hook subscriptions, HL7 v2 messages over HTTP, and health.

Every route but \`/healthz\`, \`/readyz\` and \`/metrics\` takes a bearer token: one of \`INGEST_TOKENS\`, or of \`ADMIN_TOKENS\` on the patient administration routes. Errors are \`{detail: [{loc, msg, type}]}\` for validation (422) and \`{detail: "…"}\` otherwise; a 503 carries \`Retry-After\` and means "send the same request again later": nothing was stored. Until the process can serve, every route but \`/healthz\` and \`/metrics\` answers 503.

Generated from the routes' schemas; served at \`${OPENAPI_PATH}\` and checked in as \`docs/openapi.json\` (\`npm run openapi\`).`;

const TAGS = Object.entries({
  records: 'Record updates from the integration engine.',
  presets: 'The concordance queries preset for a patient.',
  patients: 'Patient administration (`ADMIN_TOKENS` only), audited.',
  messages: 'The message trace (`ADMIN_TOKENS` only): what became of each message received.',
  fhir: 'FHIR R4 subscription notifications, Bundles and rest-hooks.',
  hl7v2: 'HL7 v2 messages (ER7) over HTTP; the same handler as MLLP.',
  health: 'Liveness, readiness and metrics: no token.',
  meta: 'This description.',
}).map(([name, description]) => ({ name, description }));

/** The document's `info.version` … `paths` skeleton is filled from the routes registered later. */
const OpenApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

/**
 * Describes every route registered after it (register it before the routes) and serves the
 * description at {@link OPENAPI_PATH}. It needs an ingest token like every data route: it holds no
 * data, but which routes and options a site runs is its own business, and a caller without a token
 * learns nothing of the routes elsewhere either (see installBearerAuth).
 */
export async function registerIngestOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'concordance-worker ingest API',
        version: packageInfo().version,
        description: DESCRIPTION,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      tags: TAGS,
      components: {
        securitySchemes: {
          ingestToken: {
            type: 'http',
            scheme: 'bearer',
            description:
              'One of `INGEST_TOKENS`: the integration engine’s. Refused on patient administration (403).',
          },
          adminToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'One of `ADMIN_TOKENS`: patient administration only (401 elsewhere).',
          },
        },
      },
      security: [{ ingestToken: [] }],
    },
    // 3.1 schemas are JSON Schema 2020-12, where `const` is a keyword like any other.
    convertConstToEnum: false,
    transform,
    transformObject,
  });

  app.get(
    OPENAPI_PATH,
    {
      schema: {
        operationId: 'getOpenApi',
        summary: 'This OpenAPI 3.1 description',
        tags: ['meta'],
        response: {
          200: {
            description: 'The description; the same as `docs/openapi.json` of this version.',
            content: { 'application/json': { schema: OpenApiDocumentSchema } },
          },
        },
      },
    },
    async () => app.swagger(),
  );
}
