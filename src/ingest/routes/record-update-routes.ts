import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { acceptRecordUpdate, type RecordUpdateDeps } from '../accept-record-update.ts';
import { requireJson } from '../hooks/require-json.ts';
import type { IngestMetrics, IngestOutcome } from '../ingest-metrics.ts';
import { recordUpdateBodySchema } from '../schemas/record-update-body.ts';

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
      schema: { body: recordUpdateBodySchema({ tables, identifyingFields }) },
      onRequest: requireJson,
      // Counted once the answer is out, whatever produced it (handler, validation, auth, Redis).
      onResponse: async (request, reply) => {
        const outcome = outcomeOf(reply.statusCode);
        const body = request.body as { source?: unknown } | null | undefined;
        if (outcome !== undefined) metrics.countEvent(body?.source, outcome);
      },
    },
    async (request, reply) => {
      const result = await acceptRecordUpdate(deps, request.body);
      if (result.outcome === 'duplicate') return reply.code(200).send(result.answer);
      return reply.code(202).send(result.answer);
    },
  );
};
