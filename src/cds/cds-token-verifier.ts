import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
} from 'jose';
import type { CdsHooksClient } from '../config/cds-hooks-schema.ts';
import { CdsTokenError } from './cds-token-error.ts';
import type { JtiReplayGuard } from './jti-replay.ts';

/**
 * Asymmetric algorithms only: CDS Hooks forbids `none` and every symmetric one (a shared secret
 * would let the service forge the client's tokens).
 */
export const CDS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

export interface CdsTokenVerifierOptions {
  clients: readonly CdsHooksClient[];
  replay: JtiReplayGuard;
  /** `cds_hooks.clock_tolerance_s`. */
  clockToleranceS: number;
  /** `cds_hooks.max_token_age_s`: the oldest `iat` accepted. */
  maxTokenAgeS: number;
  /** How long a JWKS URL may take to answer. @defaultValue 5000 */
  jwksTimeoutMs?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/** Who called, once the token is accepted. */
export interface CdsCaller {
  issuer: string;
  client: CdsHooksClient;
}

/**
 * Verifies the JWT of a CDS Hooks call (CDS Hooks 2.0, "Trusting CDS Clients"): its `iss` must be a
 * configured client's; its signature must verify under that client's JWKS (fetched from its URL
 * and cached, or inline), with an asymmetric algorithm; `aud` must be one of `audiences` (the URL
 * of the endpoint called); `exp`, `iat` and `jti` are required, `exp` not past and `iat` not older
 * than `max_token_age_s` (both with `clock_tolerance_s`); a `jti` already accepted is a replay.
 * Every failure is a {@link CdsTokenError}.
 */
export class CdsTokenVerifier {
  readonly #o: CdsTokenVerifierOptions;
  readonly #keys = new Map<string, JWTVerifyGetKey>();

  constructor(options: CdsTokenVerifierOptions) {
    this.#o = options;
    for (const client of options.clients) {
      const getKey =
        client.jwks !== undefined
          ? createLocalJWKSet(client.jwks as JSONWebKeySet)
          : createRemoteJWKSet(new URL(client.jwks_url as string), {
              timeoutDuration: options.jwksTimeoutMs ?? 5_000,
            });
      this.#keys.set(client.issuer, getKey);
    }
  }

  async verify(token: string | undefined, audiences: readonly string[]): Promise<CdsCaller> {
    if (token === undefined) throw new CdsTokenError('missing');
    let issuer: unknown;
    try {
      issuer = decodeJwt(token).iss;
    } catch (cause) {
      throw new CdsTokenError('invalid', { cause });
    }
    const client = this.#o.clients.find((c) => c.issuer === issuer);
    const getKey = typeof issuer === 'string' ? this.#keys.get(issuer) : undefined;
    if (client === undefined || getKey === undefined) throw new CdsTokenError('issuer');
    const now = this.#o.now?.() ?? Date.now();
    let exp: number;
    let jti: string;
    try {
      const { payload } = await jwtVerify(token, getKey, {
        issuer: client.issuer,
        audience: [...audiences],
        algorithms: CDS_ALGORITHMS,
        requiredClaims: ['exp', 'iat', 'jti'],
        clockTolerance: this.#o.clockToleranceS,
        maxTokenAge: this.#o.maxTokenAgeS,
        currentDate: new Date(now),
      });
      exp = payload.exp as number;
      jti = String(payload.jti);
    } catch (cause) {
      throw new CdsTokenError(failureOf(cause), { cause });
    }
    const ttlMs = exp * 1_000 + this.#o.clockToleranceS * 1_000 - now;
    if (!(await this.#o.replay.first(client.issuer, jti, ttlMs))) {
      throw new CdsTokenError('replayed');
    }
    return { issuer: client.issuer, client };
  }
}

function failureOf(cause: unknown): 'expired' | 'audience' | 'keys' | 'invalid' {
  if (cause instanceof errors.JWTExpired) return 'expired';
  if (cause instanceof errors.JWTClaimValidationFailed) {
    if (cause.claim === 'aud') return 'audience';
    // `iat` older than max_token_age_s: expired, as far as the caller is concerned.
    if (cause.claim === 'iat' && cause.reason === 'check_failed') return 'expired';
    return 'invalid';
  }
  if (cause instanceof errors.JWKSTimeout) return 'keys';
  if (cause instanceof errors.JOSEError) return 'invalid';
  // A JWKS URL that could not be fetched (network, status, not a JWKS).
  return 'keys';
}
