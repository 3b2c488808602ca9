import type { CdsTokenCode } from '../../cds/cds-token-error.ts';
import { IngestHttpError } from './ingest-http-error.ts';

/**
 * A CDS Hooks call whose JWT was refused: 401, and a body naming only the reason's code, one of
 * `CDS_TOKEN_FAILURES` (e.g. 'ERR_CDS_TOKEN_EXPIRED'), never a result, the token or its claims.
 */
export class CdsUnauthorizedError extends IngestHttpError {
  readonly code: CdsTokenCode;
  readonly statusCode = 401;
  override readonly name = 'CdsUnauthorizedError';

  constructor(code: CdsTokenCode, options?: ErrorOptions) {
    super(code, options);
    this.code = code;
  }

  override get headers(): Readonly<Record<string, string>> {
    return { 'www-authenticate': 'Bearer' };
  }
}
