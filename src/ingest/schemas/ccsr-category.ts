import { z } from 'zod';
import { PLACEHOLDER_CATEGORIES, type CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { EXAMPLE_CCSR_CATEGORY } from '../openapi/request-examples.ts';

/**
 * A real CCSR v2023.1 problem category. Placeholder codes (XXX000, NoDX1, …) exist in the tables
 * only for default assignment: the service cannot evaluate them, so they are refused up front.
 */
export function ccsrCategorySchema(tables: Pick<CcsrTables, 'isCategory'>) {
  return z
    .string()
    .superRefine((code, ctx) => {
      if (tables.isCategory(code)) return;
      ctx.addIssue({
        code: 'custom',
        message: PLACEHOLDER_CATEGORIES.has(code)
          ? 'a placeholder code, not a CCSR v2023.1 problem category'
          : 'not a CCSR v2023.1 problem category',
      });
    })
    .meta({
      description:
        'A CCSR v2023.1 problem category (placeholder codes such as XXX000 are refused).',
      examples: [EXAMPLE_CCSR_CATEGORY],
    });
}
