import { ConcordanceError } from '../errors/concordance-error.ts';

/** The source cannot be read: no such folder, no NDJSON in it, or a manifest we cannot use. */
export class ImportSourceError extends ConcordanceError {
  static readonly code = 'ERR_IMPORT_SOURCE';
  readonly code = ImportSourceError.code;
}

/** The FHIR server refused or failed the `$export` (kick-off, status or a file download). */
export class ExportFailedError extends ConcordanceError {
  static readonly code = 'ERR_IMPORT_EXPORT';
  readonly code = ExportFailedError.code;
}

/** SMART Backend Services: no token for the client (bad key, unknown client, refused scope). */
export class ExportAuthError extends ConcordanceError {
  static readonly code = 'ERR_IMPORT_AUTH';
  readonly code = ExportAuthError.code;
}

/**
 * The state folder holds another run (another source, or a state this release cannot read): the
 * message says how to start over (`--restart`).
 */
export class ImportStateError extends ConcordanceError {
  static readonly code = 'ERR_IMPORT_STATE';
  readonly code = ImportStateError.code;
}
