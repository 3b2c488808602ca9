/** What {@link PerClientThrottle.admit} answers for a client whose line may be written. */
export interface Admitted {
  /** Lines of this client held back since its last written one. */
  suppressed: number;
}

export interface PerClientThrottleOptions {
  /** @defaultValue 60 000 (one line per client per minute) */
  windowMs?: number;
  /**
   * Clients remembered at once; past that the longest-remembered is forgotten (its next line is
   * written at once), so that a flood from many addresses costs bounded memory.
   * @defaultValue 10 000
   */
  maxClients?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/**
 * At most one log line per client (an address) per window: {@link admit} answers whether this
 * one may be written, with how many were held back since the last. Kept in a Map in the order
 * lines were written, so the oldest entries are the first to expire or be forgotten.
 */
export class PerClientThrottle {
  readonly #windowMs: number;
  readonly #maxClients: number;
  readonly #now: () => number;
  readonly #seen = new Map<string, { since: number; suppressed: number }>();

  constructor({
    windowMs = 60_000,
    maxClients = 10_000,
    now = Date.now,
  }: PerClientThrottleOptions = {}) {
    this.#windowMs = windowMs;
    this.#maxClients = maxClients;
    this.#now = now;
  }

  /** Clients remembered now. */
  get size(): number {
    return this.#seen.size;
  }

  /** The client's line may be written (with the count held back), or undefined: hold it back. */
  admit(client: string): Admitted | undefined {
    const now = this.#now();
    const entry = this.#seen.get(client);
    if (entry !== undefined && now - entry.since < this.#windowMs) {
      entry.suppressed += 1;
      return undefined;
    }
    this.#seen.delete(client);
    this.#seen.set(client, { since: now, suppressed: 0 });
    this.#prune(now);
    return { suppressed: entry?.suppressed ?? 0 };
  }

  /** Forgets expired clients that held nothing back, and the oldest past `maxClients`. */
  #prune(now: number): void {
    for (const [client, entry] of this.#seen) {
      const expired = now - entry.since >= this.#windowMs && entry.suppressed === 0;
      if (!expired && this.#seen.size <= this.#maxClients) return;
      this.#seen.delete(client);
    }
  }
}
