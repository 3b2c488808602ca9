import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { AssembledPatient } from '../interface/assembled-patient.ts';
import {
  ConcordanceJobResultSchema,
  ConcordanceRequestSchema,
  ConcordanceSubmitResponseSchema,
} from '../interface/concordance.ts';
import {
  PreventRegisterRequestSchema,
  PreventRegisterResponseSchema,
  PreventRequestSchema,
  PreventResponseSchema,
  type PreventRequest,
  type PreventResponse,
} from '../interface/prevent.ts';
import {
  RelationshipListSchema,
  RelationshipSchema,
  type Relationship,
  type RelationshipProjection,
} from '../interface/relationship.ts';
import { defaultUserAgent } from './default-user-agent.ts';
import { ServiceBadResponseError } from './errors/service-bad-response-error.ts';
import { ServiceParamsError } from './errors/service-params-error.ts';
import { ServiceValidationError } from './errors/service-validation-error.ts';
import { JobStatusClassifier, type JobState, type JobStatusSets } from './job-status-classifier.ts';
import {
  buildRelationshipQuery,
  DEFAULT_PAGE_LIMIT,
  type RelationshipListParams,
} from './relationship-query.ts';
import { DEFAULT_RETRY, type RetryOptions } from './retry-policy.ts';
import {
  defaultSleep,
  ServiceTransport,
  type ServiceLogger,
  type ServiceResponseInfo,
} from './service-transport.ts';

export type { RelationshipListParams } from './relationship-query.ts';
export type { RetryOptions } from './retry-policy.ts';
export type { JobState, JobStatusSets } from './job-status-classifier.ts';
export type { ServiceLogger, ServiceResponseInfo } from './service-transport.ts';

export interface ServiceClientOptions {
  /** Base address of the service, e.g. `https://cgs.example.org` (a path prefix is kept). */
  baseUrl: string;
  /** Sent as `x-api-key`; never appears in errors or logs. */
  apiKey: string;
  /** Per attempt, from sending to the last byte of the answer. @defaultValue 10_000 */
  timeoutMs?: number;
  /** Retries of GET requests; POSTs are never retried. */
  retry?: RetryOptions;
  /** Which job status values mean success, failure, lost (and known pending). */
  statuses?: JobStatusSets;
  /** Prevent paths, which the interface does not show. */
  preventPaths?: {
    /** @defaultValue `'/v1/patient'` */
    register?: string;
    /** `{patient_service_id}` is replaced, URL-encoded. @defaultValue `'/v1/patient/{patient_service_id}'` */
    recommend?: string;
  };
  /** @defaultValue `concordance-worker/<version from package.json>` */
  userAgent?: string;
  /** Pino-compatible; gets unknown job statuses (warn, once per value) and retries (debug). */
  logger?: ServiceLogger;
  /** Called after every attempt, retries included; for metrics. Must not throw (it is caught). */
  onResponse?: (info: ServiceResponseInfo) => void;
  /**
   * Waits between retries. Tests inject one to record the delays asked for.
   * @defaultValue a timer, cut short by the call's abort signal
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * The undici dispatcher the calls go through: a proxy and a CA bundle (see
   * `outboundDispatcher`). The client speaks undici, not got: see {@link ServiceTransport}.
   * @defaultValue a keep-alive pool of the client's own for `baseUrl`'s origin
   */
  dispatcher?: Dispatcher | undefined;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call, including a wait between retries; the call rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Options of `relationships.iterate`. */
export interface IterateOptions extends CallOptions {
  /**
   * Told when the service refused the page size with a 422 about `limit` alone (the interface
   * states no maximum): the walk goes on with half of it. Must not throw.
   */
  onPageSizeRefused?: (refused: number, next: number, error: ServiceValidationError) => void;
}

export interface ConcordanceJob {
  state: JobState;
  /** The status string as the service sent it. */
  status: string;
  concordance: Record<string, unknown> | null;
  /** The whole validated answer, unknown fields included. */
  raw: unknown;
  /** The wait the service asked for before the next poll (`Retry-After`), when it sent one. */
  retryAfterMs?: number;
}

export interface ServiceClient {
  /** The service's `host[:port]` from `baseUrl`, for logs (never a path, a query or the key). */
  readonly host: string;
  concordance: {
    /** Submits a query. Never retried: on any error the caller decides whether to submit again. */
    submit(
      req: { assembled_patient: AssembledPatient; ccsr_category: string },
      opts?: CallOptions,
    ): Promise<{ jobId: string }>;
    /** Polls a job. A 404 is a {@link ServiceNotFoundError}, not `state: 'lost'`. */
    get(jobId: string, opts?: CallOptions): Promise<ConcordanceJob>;
  };
  prevent: {
    /** Creates the service identifier of one patient; returns `patient_service_id`. */
    registerPatient(uniquePatientIdentifier: string, opts?: CallOptions): Promise<string>;
    recommend(req: PreventRequest, opts?: CallOptions): Promise<PreventResponse>;
  };
  relationships: {
    get(id: string, opts?: CallOptions): Promise<Relationship>;
    list(
      params?: RelationshipListParams,
      opts?: CallOptions,
    ): Promise<{ data: RelationshipProjection[]; total?: number }>;
    /**
     * Every item from `offset` on, page by page, until a short or empty page or `total`. A page
     * size the service refuses (422 at `query.limit` only) is halved and asked again, down to 1.
     */
    iterate(
      params?: RelationshipListParams,
      opts?: IterateOptions,
    ): AsyncGenerator<RelationshipProjection>;
  };
}

/** Without a projection every item must be a whole relationship. */
const FullRelationshipListSchema = RelationshipListSchema.extend({
  data: z.array(RelationshipSchema),
});

/** Unknown status values remembered per client; bounded so a chatty service cannot grow it. */
const MAX_WARNED_STATUSES = 100;

export function createServiceClient(options: ServiceClientOptions): ServiceClient {
  checkOptions(options);
  const transport = new ServiceTransport({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    timeoutMs: options.timeoutMs ?? 10_000,
    retry: { ...DEFAULT_RETRY, ...definedOnly(options.retry) },
    userAgent: options.userAgent ?? defaultUserAgent(),
    logger: options.logger,
    onResponse: options.onResponse,
    sleep: options.sleep ?? defaultSleep,
    dispatcher: options.dispatcher,
  });
  const classifier = new JobStatusClassifier(options.statuses);
  const warnedStatuses = new Set<string>();
  const registerPath = options.preventPaths?.register ?? '/v1/patient';
  const recommendPath = options.preventPaths?.recommend ?? '/v1/patient/{patient_service_id}';

  const classify = (status: string): JobState => {
    const { state, known } = classifier.classify(status);
    if (!known && !warnedStatuses.has(status) && warnedStatuses.size < MAX_WARNED_STATUSES) {
      warnedStatuses.add(status);
      options.logger?.warn({ status }, 'unknown concordance job status; treated as pending');
    }
    return state;
  };

  const list: ServiceClient['relationships']['list'] = async (params = {}, opts) => {
    const query = buildRelationshipQuery(params);
    const endpoint = 'GET /v1/relationships';
    const page = await transport.call({
      method: 'GET',
      endpoint,
      path: '/v1/relationships',
      query,
      schema: params.fields === undefined ? FullRelationshipListSchema : RelationshipListSchema,
      signal: opts?.signal,
    });
    // A total sent unasked is harmless; one missing when asked for would break paging callers.
    if (params.include_total === true && page.total === undefined) {
      throw new ServiceBadResponseError(
        `${endpoint} left out total although include_total was true`,
        { endpoint },
      );
    }
    return page.total === undefined ? { data: page.data } : { data: page.data, total: page.total };
  };

  return {
    host: new URL(options.baseUrl).host,
    concordance: {
      async submit(req, opts) {
        checkBody(ConcordanceRequestSchema, req, 'POST /v1/concordance');
        const answer = await transport.call({
          method: 'POST',
          endpoint: 'POST /v1/concordance',
          path: '/v1/concordance',
          body: req,
          schema: ConcordanceSubmitResponseSchema,
          signal: opts?.signal,
        });
        if (typeof answer === 'string') return { jobId: answer };
        const jobId = [answer.job_id, answer.id].find(
          (id): id is string => typeof id === 'string' && id !== '',
        );
        // The schema guarantees one of them; this only satisfies the compiler.
        if (jobId === undefined)
          throw new ServiceBadResponseError('no job id', { endpoint: 'POST /v1/concordance' });
        return { jobId };
      },
      async get(jobId, opts) {
        const endpoint = 'GET /v1/concordance/{job_id}';
        let retryAfterMs: number | undefined;
        const raw = await transport.call({
          method: 'GET',
          endpoint,
          path: `/v1/concordance/${pathSegment(jobId, 'job_id', endpoint)}`,
          schema: ConcordanceJobResultSchema,
          signal: opts?.signal,
          onRetryAfter: (ms) => {
            retryAfterMs = ms;
          },
        });
        return {
          state: classify(raw.status),
          status: raw.status,
          concordance: raw.concordance ?? null,
          raw,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        };
      },
    },
    prevent: {
      async registerPatient(uniquePatientIdentifier, opts) {
        const endpoint = `POST ${registerPath}`;
        const body = { unique_patient_identifier: uniquePatientIdentifier };
        checkBody(PreventRegisterRequestSchema, body, endpoint);
        const answer = await transport.call({
          method: 'POST',
          endpoint,
          path: registerPath,
          body,
          schema: PreventRegisterResponseSchema,
          signal: opts?.signal,
        });
        return answer.patient_service_id;
      },
      async recommend(req, opts) {
        const endpoint = `POST ${recommendPath}`;
        checkBody(PreventRequestSchema, req, endpoint);
        return transport.call({
          method: 'POST',
          endpoint,
          path: recommendPath.replaceAll('{patient_service_id}', () =>
            pathSegment(req.patient_service_id, 'patient_service_id', endpoint),
          ),
          body: req,
          schema: PreventResponseSchema,
          signal: opts?.signal,
        });
      },
    },
    relationships: {
      async get(id, opts) {
        const endpoint = 'GET /v1/relationships/{relationship_id}';
        return transport.call({
          method: 'GET',
          endpoint,
          path: `/v1/relationships/${pathSegment(id, 'relationship_id', endpoint)}`,
          schema: RelationshipSchema,
          signal: opts?.signal,
        });
      },
      list,
      async *iterate(params = {}, opts) {
        let limit = params.limit ?? DEFAULT_PAGE_LIMIT;
        let offset = params.offset ?? 0;
        for (;;) {
          let page: Awaited<ReturnType<typeof list>>;
          try {
            page = await list({ ...params, offset, limit }, opts);
          } catch (err) {
            if (limit === 1 || !refusesLimitOnly(err)) throw err;
            const next = Math.ceil(limit / 2);
            try {
              opts?.onPageSizeRefused?.(limit, next, err);
            } catch {
              // A listener that throws must not end the walk.
            }
            limit = next;
            continue;
          }
          yield* page.data;
          // Advance by what came back, so a service that returns more than asked skips nothing.
          offset += page.data.length;
          if (page.data.length < limit) return;
          if (page.total !== undefined && offset >= page.total) return;
        }
      },
    },
  };
}

/** A 422 whose every item is about the `limit` query parameter. */
function refusesLimitOnly(err: unknown): err is ServiceValidationError {
  return (
    err instanceof ServiceValidationError &&
    err.items.length > 0 &&
    err.items.every(
      (item) => item.loc.length === 2 && item.loc[0] === 'query' && item.loc[1] === 'limit',
    )
  );
}

function pathSegment(value: string, name: string, endpoint: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ServiceParamsError(`${name} must be a non-empty string`, { endpoint });
  }
  return encodeURIComponent(value);
}

/**
 * Refuses a body that breaks the interface before it leaves, naming only the paths at fault:
 * the values are patient data.
 */
function checkBody(schema: z.ZodType, body: unknown, endpoint: string): void {
  const parsed = schema.safeParse(body);
  if (parsed.success) return;
  const paths = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.map(String).join('.') || '(root)'} (${issue.code})`)
    .join(', ');
  throw new ServiceParamsError(`request body does not match the interface: ${paths}`, { endpoint });
}

function checkOptions(options: ServiceClientOptions): void {
  let url: URL | undefined;
  try {
    url = new URL(options.baseUrl);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new TypeError('baseUrl must be an http(s) URL');
  }
  if (typeof options.apiKey !== 'string' || options.apiKey === '') {
    throw new TypeError('apiKey must be a non-empty string');
  }
  const positive = { timeoutMs: options.timeoutMs };
  const nonNegative = { ...definedOnly(options.retry) };
  for (const [name, value] of Object.entries(positive)) {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
      throw new TypeError(`${name} must be a positive number`);
    }
  }
  for (const [name, value] of Object.entries(nonNegative)) {
    if (!(Number.isFinite(value) && value >= 0)) {
      throw new TypeError(`retry.${name} must be a number >= 0`);
    }
  }
  if (options.retry?.limit !== undefined && !Number.isInteger(options.retry.limit)) {
    throw new TypeError('retry.limit must be an integer');
  }
  const recommend = options.preventPaths?.recommend;
  if (recommend !== undefined && /\{(?!patient_service_id\})[^}]*\}/.test(recommend)) {
    throw new TypeError(
      'preventPaths.recommend may only contain the {patient_service_id} placeholder',
    );
  }
  for (const path of [options.preventPaths?.register, recommend]) {
    if (path !== undefined && !path.startsWith('/')) {
      throw new TypeError('preventPaths must start with "/"');
    }
  }
}

/** `{limit: undefined}` must not override a default when spread. */
function definedOnly<T extends object>(value: T | undefined): Partial<T> {
  return Object.fromEntries(
    Object.entries(value ?? {}).filter(([, v]) => v !== undefined),
  ) as Partial<T>;
}
