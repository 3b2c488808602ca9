import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AdminRequest, PatientAdmin } from '../../privacy/patient-admin.ts';
import { UnknownPatientError } from '../../privacy/unknown-patient-error.ts';
import { NotFoundError } from '../errors/not-found-error.ts';
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
  const options = { schema: { params: PatientParamsSchema }, config: { admin: true } };
  const who = (actor: string | undefined): AdminRequest => ({ actor: actor ?? 'admin-token#?' });

  app.delete('/v1/patients/:patient_id', options, async (request) => {
    const report = await orNotFound(
      admin.purge(request.params.patient_id, who(request.adminActor)),
    );
    return { purged: true, ...report };
  });

  app.put('/v1/patients/:patient_id/opt-out', options, async (request) =>
    admin.optOut(request.params.patient_id, who(request.adminActor)),
  );

  app.delete('/v1/patients/:patient_id/opt-out', options, async (request) =>
    orNotFound(admin.optIn(request.params.patient_id, who(request.adminActor))),
  );
};
