import { ConcordanceError } from '../../errors/concordance-error.ts';

/**
 * A standard OpenTelemetry environment variable (`OTEL_*`) holds a value tracing cannot use. The
 * process does not start with tracing half-configured: the message names the variable and what it
 * accepts (never the value, which may be a header carrying a token).
 */
export class TracingEnvError extends ConcordanceError {
  static readonly code = 'ERR_TRACING_ENV';
  readonly code = TracingEnvError.code;
  /** The variable at fault, e.g. `OTEL_TRACES_SAMPLER_ARG`. */
  readonly variable: string;

  constructor(variable: string, problem: string, options?: ErrorOptions) {
    super(`${variable}: ${problem}`, options);
    this.variable = variable;
  }
}
