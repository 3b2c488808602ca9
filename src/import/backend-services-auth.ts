import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { importJWK, SignJWT, type CryptoKey, type JWK, type KeyObject } from 'jose';
import { request } from 'undici';
import { z } from 'zod';
import { jsonOrUndefined, withSlash } from './http-text.ts';
import { ExportAuthError } from './import-errors.ts';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

const TokenSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z.number().positive().optional(),
});

const SmartConfigurationSchema = z.looseObject({ token_endpoint: z.url() });

/** A private JWK as the client registered its public half (`kid` and `alg` as registered). */
const PrivateJwkSchema = z.looseObject({
  kty: z.enum(['RSA', 'EC']),
  kid: z.string().min(1),
  d: z.string().min(1),
  alg: z.string().optional(),
});

export interface BackendServicesOptions {
  clientId: string;
  /** The FHIR server's base URL (its `/.well-known/smart-configuration` names the token URL). */
  fhirBaseUrl: string;
  /** @defaultValue the smart-configuration's `token_endpoint` */
  tokenUrl?: string | undefined;
  /** @defaultValue `system/*.read` */
  scope?: string | undefined;
  key: { privateKey: CryptoKey | KeyObject; kid: string; alg: string };
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * SMART Backend Services (client credentials with a JWT client assertion, signed with `jose`):
 * an access token for the `$export`, asked for again a minute before it expires. The assertion
 * has `iss` = `sub` = the client id, `aud` = the token URL, a five-minute `exp` and a fresh `jti`.
 */
export class BackendServicesAuth {
  readonly #o: BackendServicesOptions;
  readonly #now: () => number;
  #token: { value: string; until: number } | undefined;
  #tokenUrl: string | undefined;

  constructor(options: BackendServicesOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#tokenUrl = options.tokenUrl;
  }

  /** The private key of a JWK file (a JWK, or a JWKS whose first private key is used). */
  static async readKey(path: string): Promise<BackendServicesOptions['key']> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(path, 'utf8'));
    } catch (err) {
      throw new ExportAuthError(`the private key file ${path} is not readable JSON`, {
        cause: err,
      });
    }
    const keys: unknown[] =
      typeof json === 'object' && json !== null && 'keys' in json && Array.isArray(json.keys)
        ? json.keys
        : [json];
    const jwk = keys.map((k) => PrivateJwkSchema.safeParse(k)).find((p) => p.success)?.data;
    if (jwk === undefined) {
      throw new ExportAuthError(
        `${path} holds no private RSA or EC JWK with a kid (Backend Services needs the key the client registered)`,
      );
    }
    const alg = jwk.alg ?? (jwk.kty === 'RSA' ? 'RS384' : 'ES384');
    const privateKey = await importJWK(jwk as JWK, alg);
    if (privateKey instanceof Uint8Array) {
      throw new ExportAuthError(`${path}: a symmetric key cannot sign a client assertion`);
    }
    return { privateKey, kid: jwk.kid, alg };
  }

  async #discoverTokenUrl(): Promise<string> {
    if (this.#tokenUrl !== undefined) return this.#tokenUrl;
    const url = new URL('.well-known/smart-configuration', withSlash(this.#o.fhirBaseUrl));
    const answer = await request(url, { headers: { accept: 'application/json' } });
    const text = await answer.body.text();
    const parsed =
      answer.statusCode === 200
        ? SmartConfigurationSchema.safeParse(jsonOrUndefined(text))
        : undefined;
    if (parsed?.success !== true) {
      throw new ExportAuthError(
        `${url.href} answered ${answer.statusCode} without a token_endpoint: give --token-url`,
      );
    }
    this.#tokenUrl = parsed.data.token_endpoint;
    return this.#tokenUrl;
  }

  /** A valid access token (a new one when the last expires within a minute). */
  async token(): Promise<string> {
    if (this.#token !== undefined && this.#token.until > this.#now() + 60_000) {
      return this.#token.value;
    }
    const tokenUrl = await this.#discoverTokenUrl();
    const { privateKey, kid, alg } = this.#o.key;
    const seconds = Math.floor(this.#now() / 1000);
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg, kid, typ: 'JWT' })
      .setIssuer(this.#o.clientId)
      .setSubject(this.#o.clientId)
      .setAudience(tokenUrl)
      .setIssuedAt(seconds)
      .setExpirationTime(seconds + 300)
      .setJti(randomUUID())
      .sign(privateKey);
    const answer = await request(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        scope: this.#o.scope ?? 'system/*.read',
        client_assertion_type: ASSERTION_TYPE,
        client_assertion: assertion,
      }).toString(),
    });
    const text = await answer.body.text();
    const parsed =
      answer.statusCode === 200 ? TokenSchema.safeParse(jsonOrUndefined(text)) : undefined;
    if (parsed?.success !== true) {
      const reason = oauthError(text);
      throw new ExportAuthError(
        `the token endpoint refused the client (${answer.statusCode}${reason === undefined ? '' : `, ${reason}`})`,
      );
    }
    this.#token = {
      value: parsed.data.access_token,
      until: this.#now() + (parsed.data.expires_in ?? 300) * 1000,
    };
    return this.#token.value;
  }
}

/** The OAuth `error` code of a refusal (never its description: it may echo the assertion). */
function oauthError(text: string): string | undefined {
  const parsed = z.looseObject({ error: z.string().max(64) }).safeParse(jsonOrUndefined(text));
  return parsed.success ? parsed.data.error : undefined;
}
