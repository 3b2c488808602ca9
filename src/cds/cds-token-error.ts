import { ConcordanceError } from '../errors/concordance-error.ts';

/** Why a CDS Hooks JWT was refused: the `ERR_*` code the 401 carries. */
export const CDS_TOKEN_FAILURES = {
  missing: 'ERR_CDS_TOKEN_MISSING',
  issuer: 'ERR_CDS_TOKEN_ISSUER',
  invalid: 'ERR_CDS_TOKEN_INVALID',
  audience: 'ERR_CDS_TOKEN_AUDIENCE',
  expired: 'ERR_CDS_TOKEN_EXPIRED',
  replayed: 'ERR_CDS_TOKEN_REPLAYED',
  keys: 'ERR_CDS_TOKEN_KEYS',
} as const;
export type CdsTokenFailure = keyof typeof CDS_TOKEN_FAILURES;
export type CdsTokenCode = (typeof CDS_TOKEN_FAILURES)[CdsTokenFailure];

/**
 * A CDS Hooks call's JWT was refused: none, an unknown issuer, a bad signature or claims, the
 * wrong audience, expired (or issued too long ago), a `jti` seen before, or the issuer's keys
 * could not be had. The message names the reason only, never the token or its claims.
 */
export class CdsTokenError extends ConcordanceError {
  readonly code: CdsTokenCode;
  readonly reason: CdsTokenFailure;

  constructor(reason: CdsTokenFailure, options?: ErrorOptions) {
    super(`CDS Hooks token refused (${reason})`, options);
    this.reason = reason;
    this.code = CDS_TOKEN_FAILURES[reason];
  }
}
