/** One request as `GET /_admin/requests` shows it. */
export interface LoggedRequest {
  method: string;
  /** Path with its query string, as sent. */
  path: string;
  /** Null while the request is unanswered (or when it never was: a hang, a client abort). */
  status: number | null;
  /** The request headers without `x-api-key` and `x-admin-key`. */
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; null when there was none or it was rejected before parsing. */
  body: unknown;
  /** When the request arrived (epoch ms). */
  received_at: number;
  /** When it was answered (epoch ms); null while unanswered. */
  answered_at: number | null;
}

/**
 * How an entry is held: the body as JSON text, which takes about half the memory of the parsed
 * object (10,000 logged assembled patients add up).
 */
export type RecordedRequest = Omit<LoggedRequest, 'body'> & { bodyJson: string | null };

/** The last `capacity` requests in a ring buffer, oldest first. */
export class RequestLog {
  readonly #entries: (RecordedRequest | undefined)[];
  #next = 0;
  #size = 0;

  readonly capacity: number;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`request log size must be a whole number >= 0, got ${capacity}`);
    }
    this.capacity = capacity;
    this.#entries = new Array<RecordedRequest | undefined>(capacity);
  }

  get size(): number {
    return this.#size;
  }

  push(entry: RecordedRequest): void {
    if (this.capacity === 0) return;
    this.#entries[this.#next] = entry;
    this.#next = (this.#next + 1) % this.capacity;
    this.#size = Math.min(this.#size + 1, this.capacity);
  }

  entries(): LoggedRequest[] {
    const start = (this.#next - this.#size + this.capacity) % this.capacity;
    return Array.from({ length: this.#size }, (_, i) => {
      const { bodyJson, ...rest } = this.#entries[(start + i) % this.capacity] as RecordedRequest;
      return { ...rest, body: bodyJson === null ? null : (JSON.parse(bodyJson) as unknown) };
    });
  }

  clear(): void {
    this.#entries.fill(undefined);
    this.#next = 0;
    this.#size = 0;
  }
}
