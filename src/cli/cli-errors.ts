import { ConcordanceError } from '../errors/concordance-error.ts';

/** The exit codes of the commands (docs/command-line.md, "Exit codes"). */
export const EXIT_CODES = {
  ok: 0,
  /** The configuration cannot be used, or the service answered an error or could not be reached. */
  failed: 1,
  /** A bad option or input file, found before anything was sent. */
  usage: 2,
  /** `concordance submit --wait`: the job ended without a result (failed, lost, timed out). */
  noResult: 3,
} as const;

/** One problem of an input, as the service words its own (`loc`, `msg`). */
export interface InputProblem {
  loc: (string | number)[];
  msg: string;
}

/**
 * An option value or input file the command refuses before sending anything (exit 2). The
 * message and items name where the problem is, never the value: input files hold patient data.
 */
export class CliInputError extends ConcordanceError {
  static readonly code = 'ERR_CLI_INPUT';
  readonly code = CliInputError.code;
  readonly items: InputProblem[];

  constructor(message: string, items: InputProblem[] = [], options?: ErrorOptions) {
    super(message, options);
    this.items = items;
  }
}

/** The service commands need `SERVICE_API_KEY`. */
export class MissingApiKeyError extends ConcordanceError {
  static readonly code = 'ERR_NO_API_KEY';
  readonly code = MissingApiKeyError.code;

  constructor() {
    super('SERVICE_API_KEY is not set: export the API key of the Clinical Graph Service');
  }
}
