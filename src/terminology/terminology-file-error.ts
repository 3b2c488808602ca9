import { ConcordanceError } from '../errors/concordance-error.ts';
/**
 * A mapping file (`terminology.rf2_file`, `terminology.csv_file`) cannot be used: unreadable, a
 * wrong header, or a malformed row. Raised at start-up, so that a bad file stops the process
 * rather than leaving problems silently unmapped. The message names the file and line, never a row.
 */
export class TerminologyFileError extends ConcordanceError {
  static readonly code = 'ERR_TERMINOLOGY_FILE';
  readonly code = TerminologyFileError.code;
  override readonly name = 'TerminologyFileError';
}
