import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AdminRequest, PatientAdmin } from '../../privacy/patient-admin.ts';
import { UnknownPatientError } from '../../privacy/unknown-patient-error.ts';
import { NotFoundError } from '../errors/not-found-error.ts';
import { BAD_PATH, errorResponses } from '../openapi/error-responses.ts';
import {
  OptInAnswerSchema,
  OptOutAnswerSchema,
  PurgeAnswerSchema,
} from '../schemas/answer-schemas.ts';
import { PatientParamsSchema } from '../schemas/patient-params.ts';

export interface PatientAdminRouteOptions {
  admin: PatientAdmin;
}

/** An unknown patient is a 404; the audit entry was written before (see PatientAdmin). */
async function orNotFound<T>(action: Promise<T>): Promise<T> {
  try {
    return await action;
  } catch (err) {
    if (err instanceof UnknownPatientError)
      throw new NotFoundError('unknown patient', { cause: err });
    throw err;
  }
}

/**
 * Patient administration, for tokens of `ADMIN_TOKENS` only (`config.admin`, see installBearerAuth):
 * `DELETE /v1/patients/{patient_id}` purges the patient (200 with counts, 404 for a patient never
 * seen), `PUT …/opt-out` opts it out (200; a patient never seen is created, so that an objection
 * may precede the first update), `DELETE …/opt-out` lifts it (200, 404 for a patient never seen).
 * Every call writes an audit entry; its `request_id` is in the answer.
 */
export const patientAdminRoutes: FastifyPluginAsyncZod<PatientAdminRouteOptions> = async (
  app,
  { admin },
) => {
  const config = { admin: true };
  const tags = ['patients'];
  const who = (actor: string | undefined): AdminRequest => ({ actor: actor ?? 'admin-token#?' });
  const unknown = [404, 'A patient never seen (the call is audited all the same).'] as const;

  app.delete(
    '/v1/patients/:patient_id',
    {
      config,
      schema: {
        operationId: 'purgePatient',
        summary: 'Purge everything held about the patient',
        description:
          'Record, presets, queries, results waiting for delivery, remembered answers and the ' +
          'crosswalk entry. An opted-out patient keeps its crosswalk entry and opt-out (`kept`).',
        tags,
        params: PatientParamsSchema,
        response: {
          200: PurgeAnswerSchema.meta({ description: 'Purged.' }),
          ...errorResponses([400, BAD_PATH], unknown, 422),
        },
      },
    },
    async (request) => {
      const report = await orNotFound(
        admin.purge(request.params.patient_id, who(request.adminActor)),
      );
      return { purged: true as const, ...report };
    },
  );

  app.put(
    '/v1/patients/:patient_id/opt-out',
    {
      config,
      schema: {
        operationId: 'optOutPatient',
        summary: 'Opt the patient out: no query runs for it from now on',
        description:
          'Queries that had not started are cancelled. A patient never seen is registered, so ' +
          'that an objection may precede the first update.',
        tags,
        params: PatientParamsSchema,
        response: {
          200: OptOutAnswerSchema.meta({ description: 'Opted out.' }),
          ...errorResponses([400, BAD_PATH], 422),
        },
      },
    },
    async (request) => admin.optOut(request.params.patient_id, who(request.adminActor)),
  );

  app.delete(
    '/v1/patients/:patient_id/opt-out',
    {
      config,
      schema: {
        operationId: 'optInPatient',
        summary: 'Lift the patient’s opt-out',
        tags,
        params: PatientParamsSchema,
        response: {
          200: OptInAnswerSchema.meta({ description: 'No opt-out in force any more.' }),
          ...errorResponses([400, BAD_PATH], unknown, 422),
        },
      },
    },
    async (request) => orNotFound(admin.optIn(request.params.patient_id, who(request.adminActor))),
  );
};
