import { z } from 'zod';
import type { ResultEvent } from '../interface/result-event.ts';

/** The event types whose results are kept: the latest completed result per (patient, category). */
export const KEPT_TYPES: ReadonlySet<ResultEvent['type']> = new Set([
  'concordance.completed',
  'prevent.completed',
]);

/**
 * What is kept of a result event (sealed): the result and when it was made. Never the hospital's
 * `patient_id`: the patient is the key's service id.
 */
export const KeptResultSchema = z.object({
  id: z.string(),
  type: z.enum(['concordance.completed', 'prevent.completed']),
  created_at: z.string(),
  record_version: z.int().nullable(),
  ccsr_category: z.string(),
  concordance: z.record(z.string(), z.unknown()).nullable(),
  prevent: z.record(z.string(), z.unknown()).nullable(),
});
export type KeptResult = z.infer<typeof KeptResultSchema>;

/** The part of a completed event that is kept; undefined for an event that is not kept. */
export function keptResultOf(event: ResultEvent): KeptResult | undefined {
  if (event.status !== 'completed') return undefined;
  if (event.type !== 'concordance.completed' && event.type !== 'prevent.completed') {
    return undefined;
  }
  return {
    id: event.id,
    type: event.type,
    created_at: event.created_at,
    record_version: event.record_version,
    ccsr_category: event.ccsr_category,
    concordance: event.concordance,
    prevent: event.prevent ?? null,
  };
}

/** The key of a patient's kept results, in its partition: `P:cds:<psid>` (a hash per patient). */
export function keptResultsKey(prefix: string, patientServiceId: string): string {
  return `${prefix}:cds:${patientServiceId}`;
}

/** What a kept result is sealed with: it opens only under its own patient and category. */
export function keptResultContext(patientServiceId: string, category: string): string {
  return `cds:${patientServiceId}:${category}`;
}
