import { ConfigError } from '../config/config-error.ts';
import { ServiceAuthError } from '../service/errors/service-auth-error.ts';
import { ServiceError } from '../service/errors/service-error.ts';
import { ServiceNotFoundError } from '../service/errors/service-not-found-error.ts';
import { ServiceUnavailableError } from '../service/errors/service-unavailable-error.ts';
import { ServiceValidationError } from '../service/errors/service-validation-error.ts';
import { CliInputError, type InputProblem } from './cli-errors.ts';

/** `query.sort: no sort field is currently supported; query.limit: …` */
export function describeProblems(items: readonly InputProblem[]): string {
  return items.map((item) => `${item.loc.join('.') || '(root)'}: ${item.msg}`).join('; ');
}

/** One line a person can act on; never the API key or a request body. */
export function describeError(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  if (err instanceof CliInputError) {
    return err.items.length > 0 ? `${err.message}: ${describeProblems(err.items)}` : err.message;
  }
  if (err instanceof ServiceAuthError) {
    return `the service refused the API key (HTTP ${err.status ?? '401/403'}): check SERVICE_API_KEY`;
  }
  if (err instanceof ServiceNotFoundError) return `not found (HTTP 404): ${err.message}`;
  if (err instanceof ServiceValidationError) {
    return `the service rejected the request (HTTP 422): ${describeProblems(err.items)}`;
  }
  if (err instanceof ServiceUnavailableError && err.status === undefined) {
    return `cannot reach the Clinical Graph Service: ${err.message}`;
  }
  if (err instanceof ServiceError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
