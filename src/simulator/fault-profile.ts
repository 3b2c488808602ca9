import { z } from 'zod';
import { ANY_ROUTE, SERVICE_ROUTES } from './route-keys.ts';

const rate = z.number().min(0).max(1);

/**
 * Faults for one route. Each matching request draws, in this order and from the seeded stream:
 * hang, rate limit, error, malformed; the first that hits decides the answer.
 */
export const RouteFaultSchema = z.strictObject({
  /** Share of requests answered with `error_status`. @defaultValue 0 */
  error_rate: rate.optional(),
  /**
   * 5xx for an outage; 400, 404, 413 and 415 for the refusals a client cannot fix by retrying
   * (a gateway's size limit, a media type it will not take).
   * @defaultValue 503
   */
  error_status: z
    .union([
      z.literal(400),
      z.literal(404),
      z.literal(413),
      z.literal(415),
      z.literal(500),
      z.literal(502),
      z.literal(503),
    ])
    .optional(),
  /** Share of requests answered 429 with a `Retry-After` header. @defaultValue 0 */
  rate_limit_rate: rate.optional(),
  /** Whole seconds announced in `Retry-After`. @defaultValue 1 */
  retry_after_s: z.int().min(0).max(86_400).optional(),
  /** `seconds` writes `Retry-After: 1`, `http-date` an IMF-fixdate. @defaultValue 'seconds' */
  retry_after_format: z.enum(['seconds', 'http-date']).optional(),
  /** Delay before the request is handled (or faulted). @defaultValue 0 */
  added_latency_ms: z.int().min(0).max(600_000).optional(),
  /** Share of requests accepted and never answered (until the client or `close()` ends them). @defaultValue 0 */
  hang_rate: rate.optional(),
  /**
   * Share of successful answers whose body is replaced (the status stays the route's success
   * status, e.g. 202 for a submission, whose job is still created). @defaultValue 0
   */
  malformed_rate: rate.optional(),
  /** `invalid_json`: a truncated JSON text; `wrong_shape`: valid JSON that fits no schema. @defaultValue 'invalid_json' */
  malformed_body: z.enum(['invalid_json', 'wrong_shape']).optional(),
  /** Apply this rule to the next N matching requests only, then drop it. @defaultValue unlimited */
  times: z.int().min(1).optional(),
});
export type RouteFault = z.infer<typeof RouteFaultSchema>;

const RouteKeySchema = z.enum([ANY_ROUTE, ...SERVICE_ROUTES]);

/**
 * The fault profile (snake_case; JSON or YAML file, or `POST /_admin/faults`):
 *
 * ```yaml
 * latency: {min_ms: 0, max_ms: 50}     # concordance job duration, replaces --latency
 * routes:
 *   "POST /v1/concordance": {error_rate: 1, error_status: 503, times: 2}
 *   "GET /v1/concordance/:job_id": {rate_limit_rate: 0.1, retry_after_s: 2}
 *   "*": {added_latency_ms: 20}
 * job_loss_rate: 0.01                  # the job later answers not_exists
 * job_failure_rate: 0.01               # the job ends "failed"
 * never_finish_rate: 0.01              # the job stays "running"
 * ```
 *
 * Route keys are `*` or one of {@link SERVICE_ROUTES}; a request uses the rule of its own route
 * while that rule is active (see `times`), otherwise the `*` rule. The three job rates are
 * drawn once per submission and together may not exceed 1. Unknown keys are rejected so that a
 * typo cannot silently disable a fault.
 */
export const FaultProfileSchema = z
  .strictObject({
    latency: z
      .strictObject({ min_ms: z.int().min(0), max_ms: z.int().min(0) })
      .refine((l) => l.min_ms <= l.max_ms, {
        message: 'min_ms must not exceed max_ms',
        path: ['max_ms'],
      })
      .optional(),
    routes: z.partialRecord(RouteKeySchema, RouteFaultSchema).optional(),
    job_loss_rate: rate.optional(),
    job_failure_rate: rate.optional(),
    never_finish_rate: rate.optional(),
  })
  .refine(
    (p) => (p.job_loss_rate ?? 0) + (p.job_failure_rate ?? 0) + (p.never_finish_rate ?? 0) <= 1,
    { message: 'job_loss_rate + job_failure_rate + never_finish_rate must not exceed 1' },
  );
export type FaultProfile = z.infer<typeof FaultProfileSchema>;
