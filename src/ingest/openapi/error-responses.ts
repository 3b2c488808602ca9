import {
  ErrorMessageBodySchema,
  ValidationErrorBodySchema,
} from '../../interface/validation-error.ts';
import { FHIR_RETRY_AFTER_S } from '../fhir/fhir-errors.ts';
import { REDIS_RETRY_AFTER_S } from '../errors/redis-unavailable-error.ts';

/** `{detail: "…"}`: every error but a validation failure. */
export const ErrorMessageSchema = ErrorMessageBodySchema.meta({
  id: 'ErrorMessage',
  description: 'A human-readable `detail`; it never quotes request data.',
});

/** `{detail: [{loc, msg, type}]}`: a validation failure (422). */
export const ValidationErrorSchema = ValidationErrorBodySchema.meta({
  id: 'ValidationError',
  description:
    'Every problem found, one item each: `loc` is where (`body`, `path` or `query`, then the keys ' +
    'and array indexes below it), `msg` says what is wrong, `type` is a stable code.',
});

type ErrorBodySchema = typeof ErrorMessageSchema | typeof ValidationErrorSchema;

/** The error statuses the ingest routes answer on purpose (see `src/ingest/errors/`). */
export type ErrorStatus = 400 | 401 | 403 | 404 | 413 | 415 | 422 | 503;

const retryAfter = (seconds: number) => ({
  'Retry-After': {
    type: 'integer',
    minimum: 0,
    description: `Seconds to wait before sending the request again (${seconds}).`,
  },
});

/** Each status's usual meaning; a route may word its own (a 404's "what is unknown"). */
const DEFAULTS: Readonly<Record<ErrorStatus, { description: string; headers?: object }>> = {
  400: { description: 'The request could not be read: malformed JSON, or an empty JSON body.' },
  401: {
    description: 'No bearer token, or one this route does not accept.',
    headers: {
      'WWW-Authenticate': { type: 'string', description: 'The scheme to use: `Bearer`.' },
    },
  },
  403: {
    description:
      'An ingest token on a patient administration route: only `ADMIN_TOKENS` administer patients.',
  },
  404: { description: 'Not found.' },
  413: { description: 'The body is larger than `ingest.body_limit_bytes`.' },
  415: { description: 'The `Content-Type` is not one this route takes (see the request body).' },
  422: { description: 'The request failed validation: nothing was stored.' },
  503: {
    description:
      'Storage is unreachable, or the process is still starting: nothing was changed. Send the ' +
      'same request again after `Retry-After`.',
    headers: retryAfter(REDIS_RETRY_AFTER_S),
  },
};

/** A FHIR route's 503: its own Retry-After, for the FHIR server it could not read. */
export const FHIR_UNAVAILABLE = {
  description:
    'Storage unreachable, or the FHIR server could not give what the message needs (unreachable, ' +
    'refused the token, `fhir.base_url` not set): send it again after `Retry-After` (' +
    `${REDIS_RETRY_AFTER_S} s for storage, ${FHIR_RETRY_AFTER_S} s for the FHIR server).`,
  headers: retryAfter(FHIR_RETRY_AFTER_S),
};

/** A path whose percent-encoding cannot be decoded (the app's `frameworkErrors`). */
export const BAD_PATH = 'The path cannot be decoded (bad percent-encoding).';

/** A record update's 503: also when other writers kept changing the record meanwhile. */
export const RECORD_UPDATE_503 = {
  ...DEFAULTS[503],
  description:
    'Storage is unreachable, the process is still starting, or the record kept changing during ' +
    'every attempt to apply the update: nothing was stored. Send the same request again after ' +
    '`Retry-After`.',
};

/** A record update's 422: also the one of a patient never seen, sent without a record. */
export const RECORD_UPDATE_422 =
  'The body failed validation, or names a patient never seen without `assembled_patient` ' +
  '(`type: record_missing`): nothing was stored.';

/** One error response: the status's body schema, described (and its headers, when it has some). */
export function errorResponse(
  status: ErrorStatus,
  override: { description: string; headers?: object } | string = DEFAULTS[status],
): ErrorBodySchema {
  const { description, headers } =
    typeof override === 'string' ? { ...DEFAULTS[status], description: override } : override;
  const body = status === 422 ? ValidationErrorSchema : ErrorMessageSchema;
  return body.meta({ description, ...(headers === undefined ? {} : { headers }) });
}

/**
 * A route's `response` entries of these statuses (`[status, description]` to word one). Added to
 * every route by the OpenAPI transform: 401 and 403 (bearer auth), 503 (readiness).
 */
export function errorResponses(
  ...statuses: readonly (ErrorStatus | readonly [ErrorStatus, string])[]
): Partial<Record<ErrorStatus, ErrorBodySchema>> {
  return Object.fromEntries(
    statuses.map((entry) =>
      typeof entry === 'number'
        ? [entry, errorResponse(entry)]
        : [entry[0], errorResponse(...entry)],
    ),
  );
}
