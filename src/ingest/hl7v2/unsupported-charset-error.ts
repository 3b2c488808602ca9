import { ConcordanceError } from '../../errors/concordance-error.ts';
/** A listener's default character set (`hl7v2.charset.*_default`) is not one this ingester reads. */
export class UnsupportedCharsetError extends ConcordanceError {
  static readonly code = 'ERR_HL7V2_UNSUPPORTED_CHARSET';
  readonly code = UnsupportedCharsetError.code;
  override readonly name = 'UnsupportedCharsetError';

  constructor(charset: string, options?: ErrorOptions) {
    super(
      `character set "${charset}" is not supported: use an HL7 table 0211 name (ASCII, 8859/1…8859/9, 8859/15, UNICODE UTF-8) or windows-1250…1258`,
      options,
    );
  }
}
