import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { acceptRecordUpdate, type RecordUpdateDeps } from '../accept-record-update.ts';
import { requireJson } from '../hooks/require-json.ts';
import type { IngestMetrics, IngestOutcome } from '../ingest-metrics.ts';
import {
  errorResponse,
  errorResponses,
  RECORD_UPDATE_422,
  RECORD_UPDATE_503,
} from '../openapi/error-responses.ts';
import { RECORD_UPDATE_EXAMPLE } from '../openapi/request-examples.ts';
import {
  RecordUpdateAcceptedSchema,
  RecordUpdateDuplicateSchema,
} from '../schemas/answer-schemas.ts';
import { recordUpdateBodySchema } from '../schemas/record-update-body.ts';
import { countJsonAnswer } from './json-trace.ts';

export interface RecordUpdateRouteOptions extends RecordUpdateDeps {
  tables: Pick<CcsrTables, 'isCategory'>;
  identifyingFields: readonly string[];
  metrics: IngestMetrics;
}

function outcomeOf(statusCode: number): IngestOutcome | undefined {
  if (statusCode === 202) return 'accepted';
  if (statusCode === 200) return 'duplicate';
  if (statusCode === 503) return 'unavailable';
  if (statusCode >= 400 && statusCode < 500) return 'rejected';
  return undefined;
}

/** `POST /v1/record-updates`: 202 with the queries scheduled, 200 for a duplicate event id. */
export const recordUpdateRoutes: FastifyPluginAsyncZod<RecordUpdateRouteOptions> = async (
  app,
  { tables, identifyingFields, metrics, ...deps },
) => {
  app.post(
    '/v1/record-updates',
    {
      schema: {
        operationId: 'postRecordUpdate',
        summary: 'A change of one patient’s record',
        description:
          'Stores the record (when sent) and opens a concordance query per preset category of ' +
          'the patient (registered, `presets.rules`, `ccsr_categories`). Answered once durable. ' +
          'Unknown top-level fields are refused; a record is refused when a node’s `metadata` ' +
          'holds an identifying field (`privacy.identifying_fields`).',
        tags: ['records'],
        body: recordUpdateBodySchema({ tables, identifyingFields }).meta({
          examples: [RECORD_UPDATE_EXAMPLE],
        }),
        response: {
          200: RecordUpdateDuplicateSchema.meta({
            description: 'The same `event_id` within `ingest.idempotency_ttl_s`: nothing changed.',
          }),
          202: RecordUpdateAcceptedSchema.meta({
            description: 'Stored; the queries will run.',
          }),
          ...errorResponses(400, 413, 415, [422, RECORD_UPDATE_422]),
          503: errorResponse(503, RECORD_UPDATE_503),
        },
      },
      onRequest: requireJson,
      // Counted once the answer is out, whatever produced it (handler, validation, auth, Redis).
      onResponse: async (request, reply) => {
        const outcome = outcomeOf(reply.statusCode);
        const body = request.body as { source?: unknown } | null | undefined;
        if (outcome !== undefined) metrics.countEvent(body?.source, outcome);
        countJsonAnswer(deps.trace, reply.statusCode, 1);
      },
    },
    async (request, reply) => {
      const result = await acceptRecordUpdate(deps, request.body);
      if (result.outcome === 'duplicate') return reply.code(200).send(result.answer);
      return reply.code(202).send(result.answer);
    },
  );
};
