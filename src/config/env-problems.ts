import type { z } from 'zod';
import type { ConfigProblem } from './config-error.ts';
import { redactUrlPassword } from './url-redaction.ts';

/** Where the configuration's environment variables go, and which of them hold secrets. */
export interface EnvSources {
  env: NodeJS.ProcessEnv;
  /** `[variable, path, kind]`, later rows winning over earlier ones for the same path. */
  envPaths: readonly (readonly [variable: string, path: readonly string[], kind: string])[];
  /** Paths whose values are secrets (and everything under them): never quoted. */
  secretPaths: readonly (readonly string[])[];
}

/** What a URL variable must look like, said in the message when it does not. */
export const URL_FORMS: Readonly<Record<string, string>> = {
  REDIS_URL: 'redis://[user:password@]host:port[/db], or rediss://… for TLS',
  WEBHOOK_URL: 'https://host[:port]/path (or http://)',
  SERVICE_BASE_URL: 'https://host[:port][/path] (or http://)',
  FHIR_BASE_URL: 'https://host[:port]/base-path (or http://)',
  HTTP_PROXY: 'http://[user:password@]host:port',
  http_proxy: 'http://[user:password@]host:port',
  HTTPS_PROXY: 'http://[user:password@]host:port',
  https_proxy: 'http://[user:password@]host:port',
};

/** Longest stretch of a refused value quoted in a message. */
const MAX_QUOTED = 120;

interface Source {
  variable: string;
  /** How the text became a value: `string`, `int`, `list`, `bool` (see `ENV_PATHS`). */
  kind: string;
  /** The variable's text, or the list item the problem is about. */
  raw: string;
  secret: boolean;
}

const startsWith = (path: readonly string[], prefix: readonly string[]) =>
  prefix.length <= path.length && prefix.every((key, i) => path[i] === key);

/** The environment variable that set the value at `path` (or the list holding it), if one did. */
function sourceOf(path: readonly string[], sources: EnvSources): Source | undefined {
  let found: Source | undefined;
  for (const [variable, target, kind] of sources.envPaths) {
    const raw = sources.env[variable];
    if (raw === undefined || raw === '' || !startsWith(path, target)) continue;
    const index = path[target.length];
    const items = raw
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
    found = {
      variable,
      kind,
      raw: kind === 'list' && index !== undefined ? (items[Number(index)] ?? raw) : raw,
      secret: sources.secretPaths.some((secret) => startsWith(target, secret)),
    };
  }
  return found;
}

/** `got "…"`: the value as given, its password hidden, cut short when long. */
function quoted(raw: string): string {
  const shown = redactUrlPassword(raw);
  return `got ${JSON.stringify(shown.length > MAX_QUOTED ? `${shown.slice(0, MAX_QUOTED)}…` : shown)}`;
}

/** The schema of the value at `path`, through optional, default and pipe wrappers. */
function schemaAt(schema: z.ZodType, path: readonly string[]): z.ZodType | undefined {
  let current: z.ZodType | undefined = schema;
  const unwrap = () => {
    for (let depth = 0; current !== undefined && depth < 10; depth++) {
      const def = current._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
      if (def.innerType !== undefined) current = def.innerType;
      else if (def.type === 'pipe') current = def.in;
      else return;
    }
  };
  for (const key of path) {
    unwrap();
    if (current === undefined) return undefined;
    const def = current._zod.def as {
      type: string;
      shape?: Record<string, z.ZodType>;
      element?: z.ZodType;
    };
    current = def.type === 'object' ? def.shape?.[key] : def.element;
  }
  unwrap();
  return current;
}

/** ` from 0 to 65535` when the schema at `path` bounds an integer on both sides, inclusively. */
function bounds(schema: z.ZodType, path: readonly string[]): string {
  const checks = (schemaAt(schema, path)?._zod.def as { checks?: z.core.$ZodCheck[] } | undefined)
    ?.checks;
  let min: number | undefined;
  let max: number | undefined;
  for (const check of checks ?? []) {
    const def = check._zod.def as { check: string; value?: unknown; inclusive?: boolean };
    if (def.check !== 'greater_than' && def.check !== 'less_than') continue;
    if (def.inclusive !== true || typeof def.value !== 'number') return '';
    if (def.check === 'greater_than') min = def.value;
    else max = def.value;
  }
  return min === undefined || max === undefined ? '' : ` from ${min} to ${max}`;
}

/** The message for a value that came from `source`; `issue` is zod's word on it. */
function describe(issue: z.core.$ZodIssue, source: Source, schema: z.ZodType): string {
  const got = source.secret ? '' : `, ${quoted(source.raw)}`;
  const path = issue.path.map(String);
  if (source.kind === 'int') {
    const range = bounds(schema, path);
    if (range !== '' || !/^-?\d+$/.test(source.raw.trim())) {
      return `expected an integer${range}${got}`;
    }
    return `${issue.message}${got}`;
  }
  if (source.kind === 'bool' && issue.code === 'invalid_type') {
    return `expected true or false (or 1/0, yes/no)${got}`;
  }
  const form = URL_FORMS[source.variable];
  if (form !== undefined && issue.code === 'invalid_format') {
    return `expected ${form}${got}`;
  }
  return `${issue.message}${got}`;
}

/**
 * zod's issues as problems a person can act on: a value that came from an environment variable is
 * named by the variable (`INGEST_PORT (ingest.port)`), its expected form is said (an integer's
 * range, a URL's shape) and the value given is quoted, with a URL's password hidden. A secret's
 * value (see `SECRETS` in load-config.ts) is never quoted.
 */
export function issueProblems(
  issues: readonly z.core.$ZodIssue[],
  schema: z.ZodType,
  sources: EnvSources,
): ConfigProblem[] {
  return issues.map((issue) => {
    const path = issue.path.map(String);
    const source = sourceOf(path, sources);
    if (source === undefined) return { path: path.join('.'), message: issue.message };
    return {
      path: path.join('.'),
      variable: source.variable,
      message: describe(issue, source, schema),
    };
  });
}

/** `problems` with the environment variable that set each one's value, where one did. */
export function withVariables(
  problems: readonly ConfigProblem[],
  sources: EnvSources,
): ConfigProblem[] {
  return problems.map((problem) => {
    if (problem.variable !== undefined || problem.path === '') return problem;
    const source = sourceOf(problem.path.split('.'), sources);
    return source === undefined ? problem : { ...problem, variable: source.variable };
  });
}
