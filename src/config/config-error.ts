import { ConcordanceError } from '../errors/concordance-error.ts';
/** One thing wrong with the configuration, named by its path (`service.timeout_ms`). */
export interface ConfigProblem {
  path: string;
  message: string;
  /** The environment variable the value came from (`INGEST_PORT`), when one set it. */
  variable?: string;
}

/** `INGEST_PORT (ingest.port)` for a value from the environment, else the path. */
export function problemPlace(problem: ConfigProblem): string {
  const path = problem.path || '(root)';
  return problem.variable === undefined ? path : `${problem.variable} (${path})`;
}

/** The configuration cannot be used; `problems` lists every reason, not only the first. */
export class ConfigError extends ConcordanceError {
  static readonly code = 'ERR_CONFIG';
  readonly code = ConfigError.code;
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[], options?: ErrorOptions) {
    super(
      `invalid configuration:\n${problems.map((p) => `  ${problemPlace(p)}: ${p.message}`).join('\n')}`,
      options,
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
