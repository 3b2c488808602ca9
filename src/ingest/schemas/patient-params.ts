import { z } from 'zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { EXAMPLE_PATIENT_ID } from '../openapi/request-examples.ts';
import { ccsrCategorySchema } from './ccsr-category.ts';

/** The hospital's own patient id, as in the body of a record update (URL-decoded in paths). */
export const PatientIdSchema = z
  .string()
  .min(1)
  .max(128)
  .meta({
    description: 'The hospital’s own patient id (in a path: percent-encoded).',
    examples: [EXAMPLE_PATIENT_ID],
  });

/** `/v1/patients/{patient_id}/…` */
export const PatientParamsSchema = z.object({ patient_id: PatientIdSchema });

/** `/v1/patients/{patient_id}/presets/{ccsr_category}` */
export function presetParamsSchema(tables: Pick<CcsrTables, 'isCategory'>) {
  return z.object({ patient_id: PatientIdSchema, ccsr_category: ccsrCategorySchema(tables) });
}
