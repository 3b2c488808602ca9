import { z } from 'zod';

/** Registration of a per-patient service identifier (section 5.4). */
export const PreventRegisterRequestSchema = z.object({
  unique_patient_identifier: z.string().min(1),
});

/** The registration answer is not shown; the public documentation returns the service id. */
export const PreventRegisterResponseSchema = z.looseObject({
  patient_service_id: z.string().min(1),
});

/** Section 2, Prevent request body. */
export const PreventRequestSchema = z.object({
  patient_service_id: z.string().min(1),
  patient_biomarkers: z.record(z.string(), z.unknown()),
  patient_history: z.record(z.string(), z.unknown()),
  patient_demographics: z.record(z.string(), z.unknown()),
});
export type PreventRequest = z.infer<typeof PreventRequestSchema>;

/** The Prevent response is not shown; any JSON object is accepted and passed through. */
export const PreventResponseSchema = z.looseObject({});
export type PreventResponse = z.infer<typeof PreventResponseSchema>;
