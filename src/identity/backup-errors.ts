import { ConcordanceError } from '../errors/concordance-error.ts';

/** The file is not a backup of ours, or of a format version this release does not read. */
export class BackupFormatError extends ConcordanceError {
  static readonly code = 'ERR_BACKUP_FORMAT';
  readonly code = BackupFormatError.code;
}

/** The backup was sealed with another key than the one given: the message names the key it needs. */
export class BackupKeyError extends ConcordanceError {
  static readonly code = 'ERR_BACKUP_KEY';
  readonly code = BackupKeyError.code;
}

/** The key is the right one but the sealed content does not open: the file was altered or cut short. */
export class BackupIntegrityError extends ConcordanceError {
  static readonly code = 'ERR_BACKUP_INTEGRITY';
  readonly code = BackupIntegrityError.code;
}

/** The Redis to restore into already holds data of the kinds a backup holds (see `--force`). */
export class BackupTargetNotEmptyError extends ConcordanceError {
  static readonly code = 'ERR_BACKUP_TARGET_NOT_EMPTY';
  readonly code = BackupTargetNotEmptyError.code;
}

/** The backup's key prefix or partitions differ from the configuration's. */
export class BackupLayoutError extends ConcordanceError {
  static readonly code = 'ERR_BACKUP_LAYOUT';
  readonly code = BackupLayoutError.code;
}
