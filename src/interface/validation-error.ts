import { z } from 'zod';

/** One item of the interface's 422 body (section 2, "Validation error item"). */
export const ValidationErrorItemSchema = z.looseObject({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});
export type ValidationErrorItem = z.infer<typeof ValidationErrorItemSchema>;

/** The interface's validation error body: `{detail: [{loc, msg, type}]}`. */
export const ValidationErrorBodySchema = z.looseObject({
  detail: z.array(ValidationErrorItemSchema),
});
export type ValidationErrorBody = z.infer<typeof ValidationErrorBodySchema>;

/** Other error bodies carry a human-readable `detail` string. */
export const ErrorMessageBodySchema = z.looseObject({ detail: z.string() });

/**
 * Maps zod issues onto the interface's items; `prefix` names where the value came from
 * (`['body']`, `['query']`, `['path']`), as the service does.
 */
export function toValidationItems(
  issues: readonly z.core.$ZodIssue[],
  prefix: readonly (string | number)[] = [],
): ValidationErrorItem[] {
  return issues.map((issue) => ({
    loc: [...prefix, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
}
