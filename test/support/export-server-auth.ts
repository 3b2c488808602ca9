import { randomBytes } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from 'jose';
import { z } from 'zod';

/** The `client_assertion_type` of SMART Backend Services (RFC 7523). */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** The signing algorithms the token endpoint accepts (SMART requires RS384 and ES384). */
export const SIGNING_ALGORITHMS = ['RS384', 'ES384', 'RS256', 'ES256', 'PS384'] as const;

/** The longest `exp - now` SMART allows a client assertion (five minutes), plus clock slack. */
const MAX_ASSERTION_LIFETIME_S = 300 + 30;

/** A SMART v1 or v2 system scope (`system/Patient.read`, `system/*.rs`). */
const SYSTEM_SCOPE = /^system\/(\*|[A-Z][A-Za-z]+)\.(read|write|\*|[cruds]+)$/;

const TokenForm = z.object({
  grant_type: z.string(),
  client_assertion_type: z.string(),
  client_assertion: z.string().min(1),
  scope: z.string().optional(),
  client_id: z.string().optional(),
});

/** An OAuth 2.0 answer of the token endpoint: the status and the JSON body. */
export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
}

function oauthError(status: number, error: string, description: string): TokenAnswer {
  return { status, body: { error, error_description: description } };
}

/**
 * The authorisation side of the test `$export` server: registered clients (client_id and public
 * JWKS), the SMART Backend Services token endpoint (client credentials with a signed client
 * assertion, checked with `jose`: signature, iss = sub = client_id, aud = the token URL, exp at
 * most five minutes ahead, jti never seen before) and the bearer tokens it issued.
 */
export class ExportServerAuth {
  readonly #clients = new Map<string, ReturnType<typeof createLocalJWKSet>>();
  readonly #jtis = new Set<string>();
  readonly #tokens = new Map<string, number>();
  readonly #tokenUrl: string;
  readonly #lifetimeS: number;

  constructor(tokenUrl: string, tokenLifetimeSeconds: number) {
    this.#tokenUrl = tokenUrl;
    this.#lifetimeS = tokenLifetimeSeconds;
  }

  register(clientId: string, jwks: JSONWebKeySet): void {
    this.#clients.set(clientId, createLocalJWKSet(jwks));
  }

  /** Every issued token stops working (the client must ask for a new one). */
  expireTokens(): void {
    this.#tokens.clear();
  }

  /** True when `authorization` is `Bearer <a token issued here and not expired>`. */
  authorised(authorization: string | undefined): boolean {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    const expires = match?.[1] === undefined ? undefined : this.#tokens.get(match[1]);
    return expires !== undefined && expires > Date.now();
  }

  /** Answers `POST /auth/token` for the given form fields. */
  async token(form: Record<string, string>): Promise<TokenAnswer> {
    const parsed = TokenForm.safeParse(form);
    if (!parsed.success) return oauthError(400, 'invalid_request', 'missing or malformed fields');
    const request = parsed.data;
    if (request.grant_type !== 'client_credentials')
      return oauthError(400, 'unsupported_grant_type', 'grant_type must be client_credentials');
    if (request.client_assertion_type !== JWT_BEARER)
      return oauthError(400, 'invalid_request', `client_assertion_type must be ${JWT_BEARER}`);
    let clientId: string | undefined;
    try {
      clientId = decodeJwt(request.client_assertion).iss;
    } catch {
      return oauthError(400, 'invalid_request', 'client_assertion is not a JWT');
    }
    const keys = clientId === undefined ? undefined : this.#clients.get(clientId);
    if (clientId === undefined || keys === undefined)
      return oauthError(401, 'invalid_client', 'unknown client');
    if (request.client_id !== undefined && request.client_id !== clientId)
      return oauthError(401, 'invalid_client', 'client_id differs from the assertion');
    let jti: string;
    try {
      const { payload } = await jwtVerify(request.client_assertion, keys, {
        issuer: clientId,
        subject: clientId,
        audience: this.#tokenUrl,
        algorithms: [...SIGNING_ALGORITHMS],
        requiredClaims: ['exp', 'jti'],
      });
      if ((payload.exp ?? 0) - Date.now() / 1000 > MAX_ASSERTION_LIFETIME_S)
        return oauthError(401, 'invalid_client', 'exp more than five minutes ahead');
      jti = `${clientId} ${String(payload.jti)}`;
    } catch (error) {
      return oauthError(401, 'invalid_client', `client_assertion: ${(error as Error).message}`);
    }
    if (this.#jtis.has(jti)) return oauthError(401, 'invalid_client', 'jti already used');
    this.#jtis.add(jti);
    const scopes = (request.scope ?? '').split(/\s+/).filter((s) => s !== '');
    if (scopes.length === 0 || !scopes.every((s) => SYSTEM_SCOPE.test(s)))
      return oauthError(400, 'invalid_scope', 'scope must list system/ scopes');
    const accessToken = randomBytes(24).toString('base64url');
    this.#tokens.set(accessToken, Date.now() + this.#lifetimeS * 1000);
    return {
      status: 200,
      body: {
        access_token: accessToken,
        token_type: 'bearer',
        expires_in: this.#lifetimeS,
        scope: scopes.join(' '),
      },
    };
  }
}
