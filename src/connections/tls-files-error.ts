import { ConcordanceError } from '../errors/concordance-error.ts';

/**
 * A listener's TLS files cannot serve: unreadable, not PEM of their kind, or a certificate that
 * does not match its key. The message names the files, never their content.
 */
export class TlsFilesError extends ConcordanceError {
  static readonly code = 'ERR_TLS_FILES';
  readonly code = TlsFilesError.code;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TlsFilesError';
  }
}
