import { createHash } from 'node:crypto';
import got, { RequestError, type Agents } from 'got';
import type { RedisClient } from '../queues/redis-client.ts';
import { z } from 'zod';
import { CODE_SYSTEMS } from '../records/clinical-record.ts';
import { formatIcd10Cm, problemSystemOf } from './problem-code-systems.ts';
import { TerminologyServerError } from './terminology-server-error.ts';

export interface TerminologyServerOptions {
  /** `terminology.server.base_url`: the FHIR base, `ConceptMap/$translate` is appended. */
  baseUrl: string;
  /** `TERMINOLOGY_TOKEN`: a bearer token, when set. */
  token?: string | undefined;
  /** `terminology.server.method`. */
  method: 'GET' | 'POST';
  /** `terminology.server.concept_map_url`: the `url` parameter (one ConceptMap), or none. */
  conceptMapUrl?: string | null | undefined;
  /** `terminology.server.target_parameter`: `targetsystem` (R4) or `target`. */
  targetParameter: 'targetsystem' | 'target';
  timeoutMs: number;
  /** `terminology.server.cache_ttl_s`: how long an answer (a mapping or "none") is kept. */
  cacheTtlS: number;
  redis: RedisClient;
  /** Redis key prefix (`redis.prefix`). */
  prefix: string;
  /** got's agents (`outboundAgents(config.outbound)`). @defaultValue got's defaults */
  agent?: Agents | undefined;
}

const ParameterSchema: z.ZodType<Parameter> = z.looseObject({
  name: z.string(),
  valueBoolean: z.boolean().optional(),
  valueCode: z.string().optional(),
  valueCoding: z
    .looseObject({ system: z.string().optional(), code: z.string().optional() })
    .optional(),
  part: z.array(z.lazy(() => ParameterSchema)).optional(),
});
interface Parameter {
  name: string;
  valueBoolean?: boolean | undefined;
  valueCode?: string | undefined;
  valueCoding?: { system?: string | undefined; code?: string | undefined } | undefined;
  part?: Parameter[] | undefined;
}
const ParametersSchema = z.looseObject({
  resourceType: z.literal('Parameters'),
  parameter: z.array(ParameterSchema).default([]),
});

/** Matches that do not carry the source's meaning (R4 equivalence / R5 relationship codes). */
const NOT_A_MATCH = new Set(['unmatched', 'disjoint', 'not-related-to']);

/**
 * The ICD-10-CM codes of a `$translate` answer: the `concept` codings in ICD-10-CM of every
 * `match` whose equivalence (R4) or relationship (R5) is not unmatched/disjoint/not-related-to;
 * none when `result` is false.
 */
export function icd10FromTranslate(body: unknown): string[] {
  const parsed = ParametersSchema.safeParse(body);
  if (!parsed.success) throw new TerminologyServerError('the $translate answer is not Parameters');
  const params = parsed.data.parameter;
  if (params.find((p) => p.name === 'result')?.valueBoolean !== true) return [];
  const codes: string[] = [];
  for (const match of params.filter((p) => p.name === 'match')) {
    const parts = match.part ?? [];
    const kind = parts.find((p) => p.name === 'equivalence' || p.name === 'relationship');
    if (kind?.valueCode !== undefined && NOT_A_MATCH.has(kind.valueCode)) continue;
    const coding = parts.find((p) => p.name === 'concept')?.valueCoding;
    if (coding?.system === undefined || coding.code === undefined) continue;
    if (problemSystemOf(coding.system) !== 'icd10cm') continue;
    const code = formatIcd10Cm(coding.code);
    if (code !== undefined && !codes.includes(code)) codes.push(code);
  }
  return codes;
}

/**
 * Asks a FHIR terminology server to translate a problem code to ICD-10-CM
 * (`ConceptMap/$translate`, GET with query parameters or POST with a Parameters body), and keeps
 * each answer in Redis for `cacheTtlS` seconds, "no mapping" included, so that a code is asked
 * once per TTL however many patients have it. The cache key is a hash of system and code: codes
 * are not patient data, but keys stay short. Errors name the kind of failure only.
 */
export class TerminologyServer {
  readonly #o: TerminologyServerOptions;
  readonly #url: string;
  readonly #headers: Record<string, string>;

  constructor(options: TerminologyServerOptions) {
    this.#o = options;
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}/ConceptMap/$translate`;
    this.#headers = { accept: 'application/fhir+json, application/json;q=0.9' };
    if (options.token) this.#headers.authorization = `Bearer ${options.token}`;
  }

  #cacheKey(system: string, code: string): string {
    const digest = createHash('sha256').update(`${system}\u0000${code}`).digest('hex');
    return `${this.#o.prefix}:terminology:translate:${digest.slice(0, 40)}`;
  }

  /** ICD-10-CM codes for the coding (`[]`: the server knows no mapping), cached. */
  async translate(system: string, code: string): Promise<{ codes: string[]; cached: boolean }> {
    const key = this.#cacheKey(system, code);
    const hit = await this.#o.redis.get(key);
    if (hit !== null) {
      const codes = z.array(z.string()).safeParse(JSON.parse(hit));
      if (codes.success) return { codes: codes.data, cached: true };
    }
    const codes = icd10FromTranslate(await this.#ask(system, code));
    await this.#o.redis.set(key, JSON.stringify(codes), 'EX', this.#o.cacheTtlS);
    return { codes, cached: false };
  }

  async #ask(system: string, code: string): Promise<unknown> {
    const params: [string, string][] = [
      ['system', system],
      ['code', code],
      [this.#o.targetParameter, CODE_SYSTEMS.icd10cm],
    ];
    if (this.#o.conceptMapUrl) params.push(['url', this.#o.conceptMapUrl]);
    const common = {
      headers: this.#headers,
      responseType: 'text' as const,
      throwHttpErrors: false,
      followRedirect: false,
      timeout: { request: this.#o.timeoutMs },
      // No retry: a failure falls through to the next source and is not cached, so the next
      // message about the code asks again; retrying here would only hold the feed up.
      retry: { limit: 0 },
      ...(this.#o.agent === undefined ? {} : { agent: this.#o.agent }),
    };
    let response;
    try {
      response =
        this.#o.method === 'GET'
          ? await got(this.#url, {
              ...common,
              method: 'GET',
              searchParams: new URLSearchParams(params),
            })
          : await got(this.#url, {
              ...common,
              method: 'POST',
              headers: { ...this.#headers, 'content-type': 'application/fhir+json' },
              body: JSON.stringify({
                resourceType: 'Parameters',
                parameter: params.map(([name, value]) => ({
                  name,
                  [name === 'code' ? 'valueCode' : 'valueUri']: value,
                })),
              }),
            });
    } catch (error) {
      const kind = error instanceof RequestError ? error.code : 'unknown';
      throw new TerminologyServerError(`the terminology server could not be reached (${kind})`);
    }
    if (response.statusCode < 200 || response.statusCode > 299) {
      throw new TerminologyServerError(`the terminology server answered ${response.statusCode}`);
    }
    try {
      return JSON.parse(response.body) as unknown;
    } catch {
      throw new TerminologyServerError(
        'the terminology server answered with a body that is not JSON',
      );
    }
  }
}
