import { createHash } from 'node:crypto';
import type { RedisClient } from '../queues/redis-client.ts';

/**
 * The `jti`s of the CDS Hooks JWTs accepted so far, each until its token expires (`SET NX PX`):
 * a token presented twice is refused the second time. Keyed by a digest of issuer and `jti`, under
 * the configured prefix (no patient's).
 */
export class JtiReplayGuard {
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor({ redis, prefix }: { redis: RedisClient; prefix: string }) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  /** True the first time (issuer, jti) is seen before `expiresAtMs`; false for a replay. */
  async first(issuer: string, jti: string, ttlMs: number): Promise<boolean> {
    const digest = createHash('sha256').update(`${issuer}\n${jti}`, 'utf8').digest('base64url');
    const set = await this.#redis.set(
      `${this.#prefix}:cds:jti:${digest}`,
      '1',
      'PX',
      Math.max(1, Math.ceil(ttlMs)),
      'NX',
    );
    return set === 'OK';
  }
}
