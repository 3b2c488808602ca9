import { z } from 'zod';
import { AssembledPatientSchema } from './assembled-patient.ts';

/** Section 2, Concordance request. */
export const ConcordanceRequestSchema = z.object({
  assembled_patient: AssembledPatientSchema,
  ccsr_category: z.string().min(1),
});
export type ConcordanceRequest = z.infer<typeof ConcordanceRequestSchema>;

/**
 * The answer to a submission is not shown in the interface: a bare JSON string (the job id), or
 * an object carrying `job_id` or `id`.
 */
export const ConcordanceSubmitResponseSchema = z.union([
  z.string().min(1),
  z.looseObject({ job_id: z.string().min(1) }),
  z.looseObject({ id: z.string().min(1) }),
]);

/** Section 2, Concordance job result: `status` always, `concordance` an object, null, or absent. */
export const ConcordanceJobResultSchema = z.looseObject({
  status: z.string().min(1),
  concordance: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type ConcordanceJobResult = z.infer<typeof ConcordanceJobResultSchema>;
