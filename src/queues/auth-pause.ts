import type { Queue } from 'bullmq';
import type { RedisClient } from './redis-client.ts';

/**
 * The service refused our API key: every job would fail the same way, so the whole queue is
 * paused instead of burning jobs. The pause is marked as ours, so that a worker started later
 * (after the key was fixed) resumes it, while a pause an operator made stays.
 */
export class AuthPause {
  readonly #queue: Queue;
  readonly #redis: RedisClient;
  /** The key whose existence marks the pause as ours (the poll scheduler holds while it exists). */
  readonly flag: string;

  constructor(queue: Queue, redis: RedisClient, prefix: string) {
    this.#queue = queue;
    this.#redis = redis;
    this.flag = `${prefix}:${queue.name}:auth-paused`;
  }

  /** Pauses the queue; true only for the call that paused it (so that it is logged once). */
  async pause(reason: string): Promise<boolean> {
    const first = await this.#redis.set(this.flag, reason, 'NX');
    await this.#queue.pause();
    return first === 'OK';
  }

  async isPaused(): Promise<boolean> {
    return (await this.#redis.exists(this.flag)) === 1;
  }

  /** Resumes the queue if it was paused for the key; true when it did. */
  async resumeIfPaused(): Promise<boolean> {
    if ((await this.#redis.del(this.flag)) === 0) return false;
    await this.#queue.resume();
    return true;
  }
}
