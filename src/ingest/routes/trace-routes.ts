import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AdminRequest, PatientAdmin } from '../../privacy/patient-admin.ts';
import { UnknownPatientError } from '../../privacy/unknown-patient-error.ts';
import {
  DeliveryTraceSchema,
  MessageReceiptSchema,
  QueryTraceSchema,
} from '../../trace/message-trace.ts';
import { MAX_PATIENT_MESSAGES } from '../../trace/message-trace-reader.ts';
import { NotFoundError } from '../errors/not-found-error.ts';
import { BAD_PATH, errorResponses } from '../openapi/error-responses.ts';
import { EXAMPLE_PATIENT_ID, RECORD_UPDATE_EXAMPLE } from '../openapi/request-examples.ts';
import { PatientIdSchema } from '../schemas/patient-params.ts';

export interface TraceRouteOptions {
  /** Its `traces` reader, its crosswalk and its audit log. */
  admin: PatientAdmin;
}

const ControlIdParamsSchema = z.object({
  control_id: z
    .string()
    .min(1)
    .max(256)
    .meta({
      description:
        'The sender’s control id (percent-encoded): MSH-10, the FHIR notification’s event ' +
        'number or Bundle id, a JSON update’s `event_id`.',
      examples: [RECORD_UPDATE_EXAMPLE.event_id],
    }),
});

const ReceiptTraceSchema = MessageReceiptSchema.omit({ raw: true, queries: true }).extend({
  partition: z.int().min(0).describe('The Redis partition whose keys hold it.'),
  has_raw: z
    .boolean()
    .describe('A sealed copy of the message is kept (`trace.keep_raw`); never sent here.'),
  queries: z.array(
    z.object({
      category: z.string(),
      seq: z.int(),
      coalesced: z.boolean().describe('Joined a query another message had opened.'),
      trace: QueryTraceSchema.nullable().describe('The query’s steps; null when none are kept.'),
      delivery: DeliveryTraceSchema.nullable().describe(
        'The delivery of its result event; null when none is kept.',
      ),
    }),
  ),
});

const MessageTraceSchema = z
  .object({
    control_id: z.string(),
    receipts: z.array(ReceiptTraceSchema).describe('Oldest first, across partitions.'),
    skipped: z.int().min(0).describe('Stored entries that could not be read.'),
  })
  .meta({ id: 'MessageTrace' });

const PatientTraceBodySchema = z.strictObject({
  patient_id: PatientIdSchema.meta({
    description: 'The hospital’s own patient id (in the body: never in a URL or an access log).',
    examples: [EXAMPLE_PATIENT_ID],
  }),
  limit: z
    .int()
    .min(1)
    .max(MAX_PATIENT_MESSAGES)
    .optional()
    .describe('Messages at most, newest first. Default 50.'),
});

const PatientTraceAnswerSchema = z
  .object({
    request_id: z.string().describe('The audit entry of this call.'),
    patient_service_id: z.string(),
    messages: z
      .array(MessageTraceSchema)
      .describe('Newest first; each with this patient’s receipts only.'),
    skipped: z.int().min(0).describe('Stored entries that could not be read.'),
  })
  .meta({ id: 'PatientTraceAnswer' });

/**
 * The message trace (docs/message-trace.md), for tokens of `ADMIN_TOKENS` only:
 * `GET /v1/admin/messages/{control_id}/trace` (every receipt of a control id, 404 when none is
 * kept) and `POST /v1/admin/messages/trace-by-patient` (`{patient_id}` in the body, so that the
 * local id stays out of URLs and access logs; audited, 404 for a patient never seen). The sealed
 * message (`trace.keep_raw`) is never sent: only `trace --raw` opens it.
 */
export const traceRoutes: FastifyPluginAsyncZod<TraceRouteOptions> = async (app, { admin }) => {
  const config = { admin: true };
  const tags = ['messages'];
  const who = (actor: string | undefined): AdminRequest => ({ actor: actor ?? 'admin-token#?' });

  app.get(
    '/v1/admin/messages/:control_id/trace',
    {
      config,
      schema: {
        operationId: 'traceMessage',
        summary: 'Follow a message: its receipts, queries and deliveries',
        description:
          'Every receipt kept under the control id (a resend adds one), with the steps of each ' +
          'query it opened or joined and of its result’s delivery. No identifier: the patient ' +
          'is its service id.',
        tags,
        params: ControlIdParamsSchema,
        response: {
          200: MessageTraceSchema.meta({ description: 'What is kept of the message.' }),
          ...errorResponses(
            [400, BAD_PATH],
            [404, 'Nothing is kept under this control id (never received, or expired).'],
            422,
          ),
        },
      },
    },
    async (request) => {
      const trace = await admin.traces.byControlId(request.params.control_id);
      if (trace.receipts.length === 0) throw new NotFoundError('no trace of this control id');
      return trace;
    },
  );

  app.post(
    '/v1/admin/messages/trace-by-patient',
    {
      config,
      schema: {
        operationId: 'tracePatientMessages',
        summary: 'The messages of one patient, followed',
        description:
          'The patient is named in the body, never in the URL. Each call is audited ' +
          '(`read_trace`), a patient never seen included.',
        tags,
        body: PatientTraceBodySchema.meta({
          examples: [{ patient_id: EXAMPLE_PATIENT_ID, limit: 20 }],
        }),
        response: {
          200: PatientTraceAnswerSchema.meta({
            description: 'The patient’s messages kept (none: an empty list).',
          }),
          ...errorResponses(
            400,
            [404, 'A patient never seen (the call is audited all the same).'],
            413,
            415,
            422,
          ),
        },
      },
    },
    async (request) => {
      try {
        return await admin.traceOf(request.body.patient_id, who(request.adminActor), {
          limit: request.body.limit,
        });
      } catch (err) {
        if (err instanceof UnknownPatientError) {
          throw new NotFoundError('unknown patient', { cause: err });
        }
        throw err;
      }
    },
  );
};
