import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { PreventRegisterRequestSchema, PreventRequestSchema } from '../../interface/prevent.ts';
import { sendDetail, sendValidationError, sendValidationItems } from '../error-replies.ts';
import { requireJson } from '../hooks/require-json.ts';
import { preventRecommendations } from '../prevent/prevent-recommendations.ts';
import type { SimulatorState } from '../simulator-state.ts';
import { PathIdSchema } from './path-id.ts';

/**
 * Prevent: `POST /v1/patient` registers an identifier (201 new, 200 known) and
 * `POST /v1/patient/:patient_service_id` ranks lifestyle recommendations.
 */
export function registerPreventRoutes(app: FastifyInstance, state: SimulatorState): void {
  const { patients, graph } = state;

  app.post('/v1/patient', { onRequest: requireJson }, async (request, reply) => {
    const parsed = PreventRegisterRequestSchema.safeParse(request.body);
    if (!parsed.success) return sendValidationError(reply, 'body', parsed.error.issues);
    const { id, created } = patients.register(parsed.data.unique_patient_identifier);
    return reply.code(created ? 201 : 200).send({ patient_service_id: id });
  });

  const PatientParams = z.object({ patient_service_id: PathIdSchema });
  app.post(
    '/v1/patient/:patient_service_id',
    { onRequest: requireJson },
    async (request, reply) => {
      const params = PatientParams.safeParse(request.params);
      if (!params.success) return sendValidationError(reply, 'path', params.error.issues);
      const parsed = PreventRequestSchema.safeParse(request.body);
      if (!parsed.success) return sendValidationError(reply, 'body', parsed.error.issues);
      const id = params.data.patient_service_id;
      if (parsed.data.patient_service_id !== id) {
        return sendValidationItems(reply, [
          {
            loc: ['body', 'patient_service_id'],
            msg: 'must equal the patient_service_id of the path',
            type: 'value_error',
          },
        ]);
      }
      if (!patients.has(id)) return sendDetail(reply, 404, 'Patient not found');
      return preventRecommendations(parsed.data, graph);
    },
  );
}
