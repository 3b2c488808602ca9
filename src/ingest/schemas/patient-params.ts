import { z } from 'zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { isPreventPreset } from '../../ccsr/preset-names.ts';
import { EXAMPLE_CCSR_CATEGORY, EXAMPLE_PATIENT_ID } from '../openapi/request-examples.ts';
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

/**
 * `/v1/patients/{patient_id}/presets/{ccsr_category}`: a CCSR category, or the reserved preset
 * `prevent` where `prevent` allows it (Prevent on; a DELETE takes it whatever, so that presets
 * registered before Prevent was turned off can go).
 */
export function presetParamsSchema(
  tables: Pick<CcsrTables, 'isCategory'>,
  prevent: 'allowed' | 'refused' = 'refused',
) {
  const category = ccsrCategorySchema(tables);
  const name = z.string().superRefine((value, ctx) => {
    if (!isPreventPreset(value)) {
      const checked = category.safeParse(value);
      for (const issue of checked.error?.issues ?? []) {
        ctx.addIssue({ code: 'custom', message: issue.message });
      }
    } else if (prevent === 'refused') {
      ctx.addIssue({
        code: 'custom',
        message: 'the reserved preset `prevent`: Prevent is off here (prevent.enabled)',
      });
    }
  });
  return z.object({
    patient_id: PatientIdSchema,
    ccsr_category: name.meta({
      description:
        'A CCSR v2023.1 problem category (placeholder codes such as XXX000 are refused), or the ' +
        'reserved preset `prevent` (Prevent’s recommendations; registered only with ' +
        '`prevent.enabled`).',
      examples: [EXAMPLE_CCSR_CATEGORY],
    }),
  });
}
