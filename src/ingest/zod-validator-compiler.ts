import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { toValidationItems } from '../interface/validation-error.ts';
import { RequestValidationError } from './errors/request-validation-error.ts';

/** The first element of `loc`, named as the interface names it. */
const ORIGINS: Readonly<Record<string, string>> = {
  body: 'body',
  params: 'path',
  querystring: 'query',
  headers: 'header',
};

/**
 * Validates with the route's zod schemas and hands the parsed value (defaults applied) to the
 * handler. A failure becomes a {@link RequestValidationError}: fastify keeps an `Error` the
 * compiler returns as it is, so the zod issue paths reach `loc` intact (array indexes stay
 * numbers), which fastify-type-provider-zod's own compiler flattens into a JSON pointer.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    const origin = ORIGINS[httpPart ?? 'body'] ?? 'body';
    return { error: new RequestValidationError(toValidationItems(result.error.issues, [origin])) };
  };
