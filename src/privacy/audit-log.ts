import type { RedisClient } from '../queues/redis-client.ts';
import type { Logger } from '../observability/logger.ts';
import { AuditEntrySchema, type AuditEntry, type StoredAuditEntry } from './audit-entry.ts';

export interface AuditLogOptions {
  redis: RedisClient;
  prefix: string;
  /**
   * How many entries the stream keeps (trimmed approximately, `MAXLEN ~`): the oldest go first.
   * @defaultValue 100000 (`admin.audit.max_entries`)
   */
  maxEntries?: number;
  /** Gets one `audit` line per entry; absent in readers (`audit list`). */
  logger?: Logger;
}

export interface AuditListFilter {
  /** Only entries written at or after this time. */
  since?: Date;
  /** Only entries of this patient (an {@link auditPatientRef}). */
  patientRef?: string;
}

/** Entries read from the stream per round trip. */
const PAGE = 500;

/**
 * The audit trail of administrative actions on patient data, in the Redis stream
 * `${prefix}:audit` (one field, `entry`, holding the entry as JSON), bounded to `maxEntries`.
 * Every entry is also written as one structured log line (`msg: "audit"`), so that a log
 * shipper keeps a copy beyond the stream's bound.
 */
export class AuditLog {
  readonly #redis: RedisClient;
  readonly #key: string;
  readonly #maxEntries: number;
  readonly #logger: Logger | undefined;

  constructor({ redis, prefix, maxEntries = 100_000, logger }: AuditLogOptions) {
    this.#redis = redis;
    this.#key = `${prefix}:audit`;
    this.#maxEntries = maxEntries;
    this.#logger = logger;
  }

  /** Appends `entry` (validated first: an entry that breaks the schema is refused) and logs it. */
  async append(entry: AuditEntry): Promise<StoredAuditEntry> {
    const valid = AuditEntrySchema.parse(entry);
    const id = (await this.#redis.xadd(
      this.#key,
      'MAXLEN',
      '~',
      this.#maxEntries,
      '*',
      'entry',
      JSON.stringify(valid),
    )) as string;
    this.#logger?.info({ audit: { id, ...valid } }, 'audit');
    return { id, ...valid };
  }

  /** Entries oldest first, optionally from `since` on and of one patient. */
  async list(filter: AuditListFilter = {}): Promise<StoredAuditEntry[]> {
    const out: StoredAuditEntry[] = [];
    let start = filter.since === undefined ? '-' : `${filter.since.getTime()}-0`;
    for (;;) {
      const page = await this.#redis.xrange(this.#key, start, '+', 'COUNT', PAGE);
      for (const [id, fields] of page) {
        const raw = fields[fields.indexOf('entry') + 1];
        if (raw === undefined) continue;
        const entry = AuditEntrySchema.parse(JSON.parse(raw));
        if (filter.patientRef === undefined || entry.patient_ref === filter.patientRef) {
          out.push({ id, ...entry });
        }
      }
      if (page.length < PAGE) return out;
      start = `(${page[page.length - 1]?.[0] ?? ''}`;
    }
  }
}
