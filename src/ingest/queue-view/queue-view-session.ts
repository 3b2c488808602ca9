import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { bearerTokenIndex } from '../hooks/bearer-auth.ts';

/** The form of a session value: `v1.<expiry, epoch seconds>.<HMAC-SHA256, base64url>`. */
const SESSION = /^v1\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

/** The HMAC key a token's sessions are signed with (never the token itself). */
const sessionKey = (token: string) =>
  createHash('sha256').update(`concordance-worker queue view session\0${token}`, 'utf8').digest();

const macOf = (key: Buffer, expiresAtS: number) =>
  createHmac('sha256', key).update(`v1.${expiresAtS}`, 'utf8').digest();

export interface QueueViewSessionsOptions {
  /** `QUEUE_VIEW_TOKENS`. */
  tokens: readonly string[];
  /** `admin.queue_view.session_ttl_s`. */
  ttlS: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * The queue view's logins, kept nowhere: a session is its expiry signed with a key derived from
 * the token that logged in, so that any ingest process with the same tokens accepts it, and
 * taking a token out of `QUEUE_VIEW_TOKENS` ends its sessions at the next start. Every check
 * compares against every token in constant time (as the bearer checks do).
 */
export class QueueViewSessions {
  readonly ttlS: number;
  readonly #tokenIndex: (candidate: string) => number;
  readonly #keys: readonly Buffer[];
  readonly #now: () => number;

  constructor({ tokens, ttlS, now = Date.now }: QueueViewSessionsOptions) {
    this.ttlS = ttlS;
    this.#tokenIndex = bearerTokenIndex(tokens);
    this.#keys = tokens.map(sessionKey);
    this.#now = now;
  }

  /** Whether `token` is one of the view's tokens. */
  accepts(token: string): boolean {
    return this.#tokenIndex(token) !== -1;
  }

  /** A session for `token`, or undefined when it is not one of the view's tokens. */
  open(token: string): string | undefined {
    const index = this.#tokenIndex(token);
    const key = this.#keys[index];
    if (key === undefined) return undefined;
    const expiresAtS = Math.floor(this.#now() / 1_000) + this.ttlS;
    return `v1.${expiresAtS}.${macOf(key, expiresAtS).toString('base64url')}`;
  }

  /** Whether `value` is a session of one of the tokens that has not expired. */
  holds(value: string | undefined): boolean {
    const match = SESSION.exec(value ?? '');
    if (match === null) return false;
    const expiresAtS = Number(match[1]);
    // The text is compared, not its decoding: base64url's last character carries bits a decoder
    // drops, and a session has exactly one form.
    const presented = Buffer.from(match[2] ?? '', 'latin1');
    let found = false;
    for (const key of this.#keys) {
      const expected = Buffer.from(macOf(key, expiresAtS).toString('base64url'), 'latin1');
      found = timingSafeEqual(presented, expected) || found;
    }
    return found && expiresAtS * 1_000 > this.#now();
  }
}
