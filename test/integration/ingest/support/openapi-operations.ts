import { Validator } from '@cfworker/json-schema';
import type { OpenAPIV3_1 } from 'openapi-types';

/** One operation of the description, in the document's order. */
export interface Operation {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** The path as the description writes it (`/v1/patients/{patient_id}`). */
  path: string;
  operation: OpenAPIV3_1.OperationObject;
}

const METHODS = ['get', 'put', 'post', 'delete'] as const;

export function operationsOf(document: OpenAPIV3_1.Document): Operation[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item?.[method];
      return operation === undefined
        ? []
        : [{ method: method.toUpperCase() as Operation['method'], path, operation }];
    }),
  );
}

/** `METHOD /path (operationId)`, for test names and messages. */
export const nameOf = ({ method, path, operation }: Operation) =>
  `${method} ${path} (${operation.operationId})`;

function parametersOf(op: Operation): OpenAPIV3_1.ParameterObject[] {
  return (op.operation.parameters ?? []).filter(
    (p): p is OpenAPIV3_1.ParameterObject => !('$ref' in p),
  );
}

/** The documented example of a parameter (its own, or its schema's first). */
function exampleOf(parameter: OpenAPIV3_1.ParameterObject): unknown {
  if (parameter.example !== undefined) return parameter.example;
  const schema = parameter.schema as { examples?: unknown[] } | undefined;
  return schema?.examples?.[0];
}

/**
 * The URL of the operation with each path parameter set by `value` (default: its documented
 * example; a parameter without one fails the test) and the query parameters that have an example.
 */
export function urlOf(
  op: Operation,
  value: (parameter: OpenAPIV3_1.ParameterObject) => unknown = exampleOf,
): string {
  const params = parametersOf(op);
  let url = op.path;
  for (const parameter of params.filter((p) => p.in === 'path')) {
    const example = value(parameter);
    if (typeof example !== 'string') {
      throw new Error(`${nameOf(op)}: path parameter ${parameter.name} has no example`);
    }
    url = url.replace(`{${parameter.name}}`, encodeURIComponent(example));
  }
  const query = new URLSearchParams();
  for (const parameter of params.filter((p) => p.in === 'query')) {
    const example = exampleOf(parameter);
    if (example !== undefined) query.set(parameter.name, String(example));
  }
  const search = query.toString();
  return search === '' ? url : `${url}?${search}`;
}

/** The request body's documented examples, by media type, as the bytes to send. */
export function bodyExamplesOf(op: Operation): { type: string; payload: string }[] {
  const body = op.operation.requestBody;
  if (body === undefined || '$ref' in body) return [];
  return Object.entries(body.content).map(([type, media]) => {
    if (media.example === undefined) {
      throw new Error(`${nameOf(op)}: the ${type} body has no example`);
    }
    const payload =
      typeof media.example === 'string' ? media.example : JSON.stringify(media.example);
    return { type, payload };
  });
}

/** The bearer scheme the operation takes: its own `security`, else the document's. */
export function schemeOf(document: OpenAPIV3_1.Document, op: Operation): string | undefined {
  const security = op.operation.security ?? document.security ?? [];
  return security.flatMap((requirement) => Object.keys(requirement))[0];
}

export function responseOf(op: Operation, status: number): OpenAPIV3_1.ResponseObject | undefined {
  const response = op.operation.responses?.[String(status)];
  return response === undefined || '$ref' in response ? undefined : response;
}

/** The description's schema references, as references to `$defs` of a standalone schema. */
const toDefs = <T>(value: T): T =>
  JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"#/$defs/')) as T;

/** Checks answers against the description's schemas (JSON Schema 2020-12, its components). */
export class ResponseChecker {
  readonly #defs: unknown;
  readonly #compiled = new Map<object, Validator>();

  constructor(document: OpenAPIV3_1.Document) {
    this.#defs = toDefs(document.components?.schemas ?? {});
  }

  /**
   * The problems of an answer: its media type is not documented for its status, its body does not
   * validate against the documented schema, or a documented header is missing. Empty when true.
   */
  problems(
    op: Operation,
    answer: { statusCode: number; headers: Record<string, unknown>; body: string },
  ): string[] {
    const response = responseOf(op, answer.statusCode);
    if (response === undefined) return [`status ${answer.statusCode} is not documented`];
    const problems: string[] = [];
    for (const header of Object.keys(response.headers ?? {})) {
      if (answer.headers[header.toLowerCase()] === undefined) {
        problems.push(`header ${header} is missing`);
      }
    }
    if (response.content === undefined) {
      if (answer.body !== '') problems.push('a body where none is documented');
      return problems;
    }
    const type = String(answer.headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim();
    const media = type === undefined ? undefined : response.content[type];
    if (media?.schema === undefined) {
      return [...problems, `media type ${type} is not documented`];
    }
    const value: unknown = type?.includes('json') ? JSON.parse(answer.body) : answer.body;
    const result = this.#validator(media.schema).validate(value);
    for (const error of result.valid ? [] : result.errors) {
      problems.push(`${error.instanceLocation}: ${error.error}`);
    }
    return problems;
  }

  #validator(schema: object): Validator {
    let validator = this.#compiled.get(schema);
    if (validator === undefined) {
      validator = new Validator({ ...toDefs(schema), $defs: this.#defs }, '2020-12', false);
      this.#compiled.set(schema, validator);
    }
    return validator;
  }
}
