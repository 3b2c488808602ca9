import { RELATIONSHIP_FIELDS } from '../interface/relationship.ts';
import { ServiceParamsError } from './errors/service-params-error.ts';

/** Query parameters of `GET /v1/relationships` (interface section 4.5). */
export interface RelationshipListParams {
  /**
   * `field:value`; an object is turned into alternatives joined with `||` (OR), e.g.
   * `{relationship_id: ['a', 'b']}` becomes `relationship_id:a||relationship_id:b`.
   */
  filter?: string | Record<string, string | readonly string[]>;
  /** `field:value`; an object must name exactly one field. */
  search?: string | Record<string, string>;
  /** Fields to project each item onto; an array becomes a comma list. */
  fields?: string | readonly string[];
  /** Passed through as given (the service currently rejects every sort field). */
  sort?: string;
  /** Ask for `total`; the response is then required to carry it. */
  include_total?: boolean;
  /** Records to skip; an integer >= 0. @defaultValue 0 (the service's default) */
  offset?: number;
  /** Page size; an integer >= 1. @defaultValue 10 (the service's default) */
  limit?: number;
}

/** The service's page size when `limit` is not sent (interface section 4.5). */
export const DEFAULT_PAGE_LIMIT = 10;

/**
 * Checks the parameters and writes the query string. Throws {@link ServiceParamsError} for
 * anything the interface rules out, so such a call never reaches the service.
 */
export function buildRelationshipQuery(params: RelationshipListParams = {}): URLSearchParams {
  const query = new URLSearchParams();
  const filter = params.filter === undefined ? undefined : formatFilter(params.filter);
  if (filter !== undefined) query.set('filter', filter);
  const search = params.search === undefined ? undefined : formatSearch(params.search);
  if (search !== undefined) query.set('search', search);
  if (params.fields !== undefined) query.set('fields', formatFields(params.fields));
  if (params.sort !== undefined) query.set('sort', params.sort);
  if (params.include_total !== undefined) {
    if (typeof params.include_total !== 'boolean') fail('include_total must be a boolean');
    query.set('include_total', String(params.include_total));
  }
  if (params.offset !== undefined) {
    if (!Number.isSafeInteger(params.offset) || params.offset < 0) {
      fail('offset must be an integer >= 0');
    }
    query.set('offset', String(params.offset));
  }
  if (params.limit !== undefined) {
    if (!Number.isSafeInteger(params.limit) || params.limit < 1) {
      fail('limit must be an integer >= 1');
    }
    query.set('limit', String(params.limit));
  }
  return query;
}

function formatFilter(filter: string | Record<string, string | readonly string[]>): string {
  if (typeof filter === 'string') return filter;
  const alternatives: string[] = [];
  for (const [field, values] of Object.entries(filter)) {
    const list: readonly string[] = typeof values === 'string' ? [values] : values;
    // An empty list would silently drop the filter and so match *every* relationship.
    if (list.length === 0) fail(`filter.${safeName(field)} has no values`);
    for (const value of list) {
      if (value.includes('||')) fail(`a filter.${safeName(field)} value contains "||"`);
      alternatives.push(pair('filter', field, value));
    }
  }
  if (alternatives.length === 0) fail('filter names no field');
  return alternatives.join('||');
}

function formatSearch(search: string | Record<string, string>): string {
  if (typeof search === 'string') return search;
  const entries = Object.entries(search);
  const [only] = entries;
  // The format holds one field:value; how the service would combine several is not documented.
  if (only === undefined || entries.length > 1) fail('search must name exactly one field');
  return pair('search', only[0], only[1]);
}

function formatFields(fields: string | readonly string[]): string {
  const list = typeof fields === 'string' ? fields.split(',').map((f) => f.trim()) : fields;
  const allowed: readonly string[] = RELATIONSHIP_FIELDS;
  for (const field of list) {
    if (!allowed.includes(field)) {
      fail(`fields may only name ${RELATIONSHIP_FIELDS.join(', ')}; got "${safeName(field)}"`);
    }
  }
  if (list.length === 0) fail('fields is empty');
  return list.join(',');
}

function pair(param: string, field: string, value: string): string {
  if (field === '' || field.includes(':'))
    fail(`${param} field names must be non-empty, without ":"`);
  if (typeof value !== 'string') fail(`${param}.${safeName(field)} values must be strings`);
  return `${field}:${value}`;
}

/** Field names are ours, not patient data, but keep odd input from bloating a message. */
function safeName(name: string): string {
  return name.length > 40 ? `${name.slice(0, 40)}…` : name;
}

function fail(message: string): never {
  throw new ServiceParamsError(`invalid relationship list parameters: ${message}`, {
    endpoint: 'GET /v1/relationships',
  });
}
