import { redactUrlPassword } from '../config/url-redaction.ts';
import { ConcordanceError } from '../errors/concordance-error.ts';

/**
 * Replies of a Redis that refuses who we are or what we may do, rather than being away: a wrong
 * password (`WRONGPASS`, Redis 6+; `ERR invalid password`, Redis 5 and older), no password where
 * one is required (`NOAUTH`), or an ACL user without the commands, keys or channels we use
 * (`NOPERM`, "No permissions to access …"). Waiting does not fix any of them.
 */
const REFUSALS =
  /^-?(?:WRONGPASS|NOAUTH|NOPERM)\b|^-?ERR invalid (?:password|username-password)|\bno permissions\b/i;

/** True when `error`, or an error it wraps (`cause`), is Redis refusing our credentials or ACL. */
export function isRedisAuthRefusal(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  if (REFUSALS.test(error.message)) return true;
  return isRedisAuthRefusal(error.cause, depth + 1);
}

/**
 * Redis refused the credentials or the ACL permissions of `REDIS_URL`. The message names the
 * variable and the URL with its password hidden (`redis://user:***@host:port`), and Redis's reply,
 * which never holds the password.
 */
export class RedisRefusedError extends ConcordanceError {
  static readonly code = 'ERR_REDIS_REFUSED';
  readonly code = RedisRefusedError.code;

  constructor(url: string, reply: Error) {
    super(
      `Redis refused the credentials or permissions of REDIS_URL (${redactUrlPassword(url)}): ` +
        `${reply.message.slice(0, 200).replace(/\.+$/, '')}. Waiting cannot help: fix the user and password in ` +
        "REDIS_URL, or the user's ACL on the Redis server (see docs/operations.md)",
      { cause: reply },
    );
  }
}
