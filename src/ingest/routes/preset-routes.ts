import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import type { Crosswalk } from '../../identity/crosswalk.ts';
import type { PresetStore } from '../../presets/preset-store.ts';
import type { PresetRule } from '../../presets/rules.ts';
import { NotFoundError } from '../errors/not-found-error.ts';
import { BAD_PATH, errorResponses } from '../openapi/error-responses.ts';
import { NO_CONTENT, PresetListSchema, RegisteredPresetSchema } from '../schemas/answer-schemas.ts';
import { PatientParamsSchema, presetParamsSchema } from '../schemas/patient-params.ts';

export interface PresetRouteOptions {
  crosswalk: Crosswalk;
  presets: PresetStore;
  /** `config.presets.rules`, listed beside the registered presets. */
  rules: readonly PresetRule[];
  tables: Pick<CcsrTables, 'isCategory'>;
  /** `prevent.enabled`: the reserved preset `prevent` may be registered. @defaultValue false */
  preventEnabled?: boolean;
}

/**
 * Per-patient presets: `PUT` registers one (201 new, 200 existing), `DELETE` removes it, `GET`
 * lists the registered ones and the rules that apply to every patient. A preset is a CCSR
 * category or the reserved `prevent` (Prevent's recommendations, when `prevent.enabled`). Only `PUT` may create a
 * crosswalk entry: reading or deleting for a patient never seen answers 404 and stores nothing.
 */
export const presetRoutes: FastifyPluginAsyncZod<PresetRouteOptions> = async (
  app,
  { crosswalk, presets, rules, tables, preventEnabled = false },
) => {
  const PresetParams = presetParamsSchema(tables, preventEnabled ? 'allowed' : 'refused');
  const AnyPresetParams = presetParamsSchema(tables, 'allowed');
  const unknownPatient = () => new NotFoundError('unknown patient');

  app.put(
    '/v1/patients/:patient_id/presets/:ccsr_category',
    {
      schema: {
        operationId: 'putPreset',
        summary: 'Register a preset: the category’s query runs on each update of the patient',
        description: 'A patient never seen is registered too (its record may come later).',
        tags: ['presets'],
        params: PresetParams,
        response: {
          200: RegisteredPresetSchema.meta({ description: 'Already registered.' }),
          201: RegisteredPresetSchema.meta({ description: 'Registered.' }),
          ...errorResponses([400, BAD_PATH], 422),
        },
      },
    },
    async (request, reply) => {
      const { patient_id, ccsr_category } = request.params;
      const { patientServiceId } = await crosswalk.resolve(patient_id);
      const outcome = await presets.put(patientServiceId, ccsr_category, 'registered');
      const stored = await presets.get(patientServiceId, ccsr_category);
      // Deleted between the two calls by a concurrent DELETE: the registration did happen.
      const preset = stored ?? {
        ccsr_category,
        source: 'registered' as const,
        created_at: new Date().toISOString(),
      };
      return reply
        .code(outcome === 'created' ? 201 : 200)
        .send({ patient_service_id: patientServiceId, ...preset });
    },
  );

  app.delete(
    '/v1/patients/:patient_id/presets/:ccsr_category',
    {
      schema: {
        operationId: 'deletePreset',
        summary: 'Remove a registered preset',
        tags: ['presets'],
        params: AnyPresetParams,
        response: {
          204: NO_CONTENT.meta({ description: 'Removed.' }),
          ...errorResponses(
            [400, BAD_PATH],
            [404, 'A patient never seen, or no such preset for it.'],
            422,
          ),
        },
      },
    },
    async (request, reply) => {
      const { patient_id, ccsr_category } = request.params;
      const patientServiceId = await crosswalk.find(patient_id);
      if (patientServiceId === undefined) throw unknownPatient();
      if (!(await presets.delete(patientServiceId, ccsr_category))) {
        throw new NotFoundError('no such preset for this patient');
      }
      return reply.code(204).send();
    },
  );

  app.get(
    '/v1/patients/:patient_id/presets',
    {
      schema: {
        operationId: 'listPresets',
        summary: 'The patient’s presets: registered ones and the rules of every patient',
        tags: ['presets'],
        params: PatientParamsSchema,
        response: {
          200: PresetListSchema.meta({ description: 'The presets.' }),
          ...errorResponses([400, BAD_PATH], [404, 'A patient never seen.'], 422),
        },
      },
    },
    async (request) => {
      const patientServiceId = await crosswalk.find(request.params.patient_id);
      if (patientServiceId === undefined) throw unknownPatient();
      const registered = await presets.list(patientServiceId);
      const fromRules = rules.map((rule) => ({
        ccsr_category: rule.ccsr_category,
        source: 'rule' as const,
        ...(rule.when_changes === undefined ? {} : { when_changes: [...rule.when_changes] }),
      }));
      return { patient_service_id: patientServiceId, presets: [...registered, ...fromRules] };
    },
  );
};
