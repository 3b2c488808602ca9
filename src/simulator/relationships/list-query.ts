import { z } from 'zod';
import { RELATIONSHIP_FIELDS, type RelationshipField } from '../../interface/relationship.ts';

/** The only field the service filters and searches on (section 4.5). */
const SUPPORTED_FIELD = 'relationship_id';

export interface ListQuery {
  /** Exact ids, any of which matches (`||`); undefined when no filter was given. */
  filterIds?: ReadonlySet<string>;
  /** A substring the id must contain. */
  search?: string;
  fields?: readonly RelationshipField[];
  includeTotal: boolean;
  offset: number;
  limit: number;
}

/**
 * The largest page by default. The interface states no maximum for `limit` (section 8); the
 * simulator picks one, configurable (`maxListLimit`, `simulator --max-list-limit`), and refuses a
 * larger `limit` with 422 as FastAPI does for `Query(le=…)`.
 */
export const DEFAULT_MAX_LIST_LIMIT = 1000;

/** The query string parser gives an array for a repeated key; the last value wins, as in FastAPI. */
const single = z.preprocess((v) => (Array.isArray(v) ? v[v.length - 1] : v), z.string().optional());

function fieldValue(raw: string, ctx: z.RefinementCtx, what: 'filter' | 'search') {
  const colon = raw.indexOf(':');
  if (colon <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `malformed ${what} '${raw}': expected field:value`,
    });
    return undefined;
  }
  const field = raw.slice(0, colon);
  const value = raw.slice(colon + 1);
  if (field !== SUPPORTED_FIELD) {
    ctx.addIssue({
      code: 'custom',
      message: `unsupported ${what} field '${field}': supported fields: ${SUPPORTED_FIELD}`,
    });
    return undefined;
  }
  if (value === '') {
    ctx.addIssue({ code: 'custom', message: `malformed ${what} '${raw}': empty value` });
    return undefined;
  }
  return value;
}

/**
 * An integer query parameter checked as FastAPI checks `Query(ge=min, le=max)`: its messages, and
 * its error types in the issue's `params.type` (see `sendValidationError`).
 */
const integer = (min: number, max: number, fallback: number) =>
  single.transform((raw, ctx) => {
    if (raw === undefined) return fallback;
    const bound = (type: string, message: string) => {
      ctx.addIssue({ code: 'custom', message, params: { type } });
      return z.NEVER;
    };
    if (!/^[+-]?\d+$/.test(raw)) return bound('int_parsing', 'Input should be a valid integer');
    const value = Number(raw);
    if (value < min) {
      return bound('greater_than_equal', `Input should be greater than or equal to ${min}`);
    }
    if (value > max)
      return bound('less_than_equal', `Input should be less than or equal to ${max}`);
    return value;
  });

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/**
 * Parses `GET /v1/relationships`'s query, with `limit` at most `maxLimit`; the issues' paths name
 * the parameter.
 */
export const listQuerySchema = (maxLimit: number = DEFAULT_MAX_LIST_LIMIT) =>
  z
    .object({
      filter: single.transform((raw, ctx) => {
        if (raw === undefined) return undefined;
        const ids = raw.split('||').map((part) => fieldValue(part, ctx, 'filter'));
        return new Set(ids.filter((id) => id !== undefined));
      }),
      search: single.transform((raw, ctx) =>
        raw === undefined ? undefined : fieldValue(raw, ctx, 'search'),
      ),
      fields: single.transform((raw, ctx) => {
        if (raw === undefined) return undefined;
        const names = raw.split(',').map((f) => f.trim());
        const unknown = names.filter(
          (f) => !(RELATIONSHIP_FIELDS as readonly string[]).includes(f),
        );
        if (unknown.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown field(s) ${unknown.map((f) => `'${f}'`).join(', ')}; allowed: ${RELATIONSHIP_FIELDS.join(', ')}`,
          });
        }
        return names as RelationshipField[];
      }),
      include_total: single.transform((raw, ctx) => {
        if (raw === undefined || FALSE.has(raw.toLowerCase())) return false;
        if (TRUE.has(raw.toLowerCase())) return true;
        ctx.addIssue({
          code: 'custom',
          message: 'Input should be a valid boolean, unable to interpret input',
        });
        return false;
      }),
      offset: integer(0, Number.MAX_SAFE_INTEGER, 0),
      limit: integer(1, maxLimit, 10),
      sort: single.refine((v) => v === undefined, 'no sort field is currently supported'),
    })
    .transform((q): ListQuery => ({
      ...(q.filter && { filterIds: q.filter }),
      ...(q.search !== undefined && { search: q.search }),
      ...(q.fields && { fields: q.fields }),
      includeTotal: q.include_total,
      offset: q.offset,
      limit: q.limit,
    }));

/** The query schema with the default maximum page size. */
export const ListQuerySchema = listQuerySchema();
