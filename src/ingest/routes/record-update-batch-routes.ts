import type { FastifyRequest } from 'fastify';
import { countJsonAnswer } from './json-trace.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import type { ValidationErrorItem } from '../../interface/validation-error.ts';
import { acceptRecordBatch } from '../accept-record-batch.ts';
import type { RecordUpdateDeps } from '../accept-record-update.ts';
import { BatchTooLargeError } from '../errors/batch-too-large-error.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import { UnsupportedMediaTypeError } from '../errors/unsupported-media-type-error.ts';
import type { IngestMetrics, IngestOutcome } from '../ingest-metrics.ts';
import {
  errorResponse,
  errorResponses,
  RECORD_UPDATE_422,
  RECORD_UPDATE_503,
} from '../openapi/error-responses.ts';
import { RECORD_BATCH_EXAMPLE, RECORD_BATCH_NDJSON_EXAMPLE } from '../openapi/request-examples.ts';
import { RecordUpdateBatchAnswerSchema } from '../schemas/answer-schemas.ts';
import { recordUpdateBatchSchema } from '../schemas/record-update-body.ts';

export interface RecordUpdateBatchRouteOptions extends RecordUpdateDeps {
  tables: Pick<CcsrTables, 'isCategory'>;
  identifyingFields: readonly string[];
  metrics: IngestMetrics;
  /** `config.ingest.batch`: most items, and the largest body in bytes. */
  limits: { max_items: number; max_bytes: number };
}

/** The batch route's path. */
export const BATCH_ROUTE = '/v1/record-updates/batch';

const NDJSON = 'application/x-ndjson';
const ACCEPTED_TYPES = new Set(['application/json', NDJSON]);

/** NDJSON as the description shows it: text, one update per line, validated as the JSON array. */
const NDJSON_BODY = z.string().meta({
  description: 'One record update per line (blank lines skipped), each as in the JSON array.',
  examples: [RECORD_BATCH_NDJSON_EXAMPLE],
});

declare module 'fastify' {
  interface FastifyRequest {
    /** The batch route's outcome of each item, once answered 202 (for `cw_ingest_events_total`). */
    batchOutcomes?: IngestOutcome[];
  }
}

/** Route-level onRequest: a JSON array or NDJSON, also when the body is empty. */
async function requireBatchMediaType(request: FastifyRequest): Promise<void> {
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type === undefined || !ACCEPTED_TYPES.has(type)) {
    throw new UnsupportedMediaTypeError(
      undefined,
      'application/json (an array) or application/x-ndjson',
    );
  }
}

function outcomeOf(statusCode: number): IngestOutcome | undefined {
  if (statusCode === 503) return 'unavailable';
  if (statusCode >= 400 && statusCode < 500) return 'rejected';
  return undefined;
}

/**
 * `POST /v1/record-updates/batch`: many record updates in one request, for reconciliations and
 * replays, as a JSON array or as NDJSON (`application/x-ndjson`, one update per line, blank lines
 * skipped). Each item is exactly the single route's body and is validated by the same schema.
 * Validation is all or nothing: one bad item (or one malformed NDJSON line) refuses the batch with
 * 422, every bad item named by its index in `loc` (`['body', i, …]`), and nothing is stored. A
 * valid batch is committed in few Redis script calls (see {@link acceptRecordBatch}) and answered
 * 202 `{accepted, duplicates, results}` once every item is durable. At most
 * `ingest.batch.max_items` items (413 above) and `ingest.batch.max_bytes` bytes (413).
 */
export const recordUpdateBatchRoutes: FastifyPluginAsyncZod<RecordUpdateBatchRouteOptions> = async (
  app,
  { tables, identifyingFields, metrics, limits, ...deps },
) => {
  // Fastify's own JSON parsing for each line: the same refusal of prototype poisoning as a body.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(
    NDJSON,
    { parseAs: 'string', bodyLimit: limits.max_bytes },
    (request, body, done) => {
      const items: unknown[] = [];
      const malformed: ValidationErrorItem[] = [];
      let lineNumber = 0;
      for (const line of (body as string).split('\n')) {
        lineNumber += 1;
        if (line.trim() === '') continue;
        if (items.length >= limits.max_items) {
          done(new BatchTooLargeError(limits.max_items), undefined);
          return;
        }
        const index = items.length;
        parseJson(request, line, (error, value) => {
          if (error !== null) {
            // Ours, never the parser's message: it would quote a piece of the line.
            malformed.push({
              loc: ['body', index],
              msg: `malformed JSON on line ${lineNumber}`,
              type: 'json_invalid',
            });
          }
          items.push(value);
        });
      }
      done(malformed.length > 0 ? new RequestValidationError(malformed) : null, items);
    },
  );

  const body = recordUpdateBatchSchema({ tables, identifyingFields }).meta({
    examples: [RECORD_BATCH_EXAMPLE],
  });
  app.post(
    BATCH_ROUTE,
    {
      bodyLimit: limits.max_bytes,
      schema: {
        operationId: 'postRecordUpdateBatch',
        summary: 'Many record updates at once (reconciliations, replays)',
        description:
          'Each item is exactly the body of `POST /v1/record-updates`. All or nothing: one bad ' +
          'item (or malformed NDJSON line) refuses the batch with 422, each bad item named by its ' +
          'index (`loc: ["body", i, …]`), and nothing is stored. Answered once every item is ' +
          'durable. At most `ingest.batch.max_items` items and `ingest.batch.max_bytes` bytes.',
        tags: ['records'],
        body,
        documented: {
          body: {
            required: true,
            content: {
              'application/json': body,
              [NDJSON]: NDJSON_BODY,
            },
          },
        },
        response: {
          202: RecordUpdateBatchAnswerSchema.meta({
            description: 'Every item stored (or a duplicate); the queries will run.',
          }),
          ...errorResponses(
            400,
            [
              413,
              'More than `ingest.batch.max_items` items, or more than `ingest.batch.max_bytes`.',
            ],
            415,
            [422, RECORD_UPDATE_422],
          ),
          503: errorResponse(503, RECORD_UPDATE_503),
        },
      },
      onRequest: requireBatchMediaType,
      // Before validation: a batch above the limit is refused without validating its items.
      preValidation: async (request) => {
        const body: unknown = request.body;
        if (Array.isArray(body) && body.length > limits.max_items) {
          throw new BatchTooLargeError(limits.max_items);
        }
      },
      // Counted once the answer is out: each item's own outcome, or the batch's for every item.
      onResponse: async (request, reply) => {
        const body: unknown = request.body;
        const items: unknown[] = Array.isArray(body) ? body : [undefined];
        // The feed's counters (see countJsonAnswer); stored items' receipts are the commits'.
        countJsonAnswer(deps.trace, reply.statusCode, items.length);
        const sourceOf = (item: unknown) =>
          typeof item === 'object' && item !== null
            ? (item as { source?: unknown }).source
            : undefined;
        const outcomes = request.batchOutcomes;
        if (outcomes !== undefined) {
          outcomes.forEach((outcome, i) => metrics.countEvent(sourceOf(items[i]), outcome));
          return;
        }
        const outcome = outcomeOf(reply.statusCode);
        if (outcome !== undefined)
          for (const item of items) metrics.countEvent(sourceOf(item), outcome);
      },
    },
    async (request, reply) => {
      const answer = await acceptRecordBatch(deps, request.body);
      request.batchOutcomes = answer.results.map((result) =>
        'duplicate' in result ? 'duplicate' : 'accepted',
      );
      return reply.code(202).send(answer);
    },
  );
};
