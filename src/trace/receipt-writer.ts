import type { Logger } from 'pino';
import { LuaScript } from '../queues/lua-script.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import type { MessageReceipt } from './message-trace.ts';
import { receiptHeadFields, type ReceiptHead } from './receipt-head.ts';
import {
  patientMessagesKey,
  receiptsKey,
  recentMessagesKey,
  traceTtlSeconds,
} from './trace-keys.ts';

const RECORD_RECEIPT = LuaScript.load(new URL('./lua/record-receipt.lua', import.meta.url));

/** The `trace` settings a writer of receipts needs. */
export interface ReceiptSettings {
  /** `trace.retention_days` in seconds. */
  ttlSeconds: number;
  /** `trace.max_receipts`. */
  maxReceipts: number;
}

/** The settings of `config.trace`, or undefined when the trace is off. */
export function receiptSettings(trace: {
  enabled: boolean;
  retention_days: number;
  max_receipts: number;
}): ReceiptSettings | undefined {
  if (!trace.enabled) return undefined;
  return { ttlSeconds: traceTtlSeconds(trace.retention_days), maxReceipts: trace.max_receipts };
}

/** The outcome of a message that stored nothing. */
export interface ReceiptOutcome {
  state: Exclude<MessageReceipt['state'], 'queued'>;
  /** The patient, when known: the receipt goes to its partition and index. */
  psid?: string | null | undefined;
  version?: number | null | undefined;
}

/**
 * Writes the receipt of a message that stores nothing (filtered, answered unchanged
 * without the commit script) in one script call: the message's only write. It goes to the
 * patient's partition when the patient is known, else to the partition its control id hashes to.
 * A failure is logged at warn (without identifiers) and never thrown: the sender's answer does not
 * depend on it.
 */
export class ReceiptWriter {
  readonly #redis: RedisClient;
  readonly #space: KeySpace;
  readonly #settings: ReceiptSettings;
  readonly #logger: Pick<Logger, 'warn'> | undefined;

  constructor(options: {
    redis: RedisClient;
    prefix: KeySpace;
    settings: ReceiptSettings;
    logger?: Pick<Logger, 'warn'> | undefined;
  }) {
    this.#redis = options.redis;
    this.#space = options.prefix;
    this.#settings = options.settings;
    this.#logger = options.logger;
  }

  /** The same writer, logging its failures to `logger`. */
  withLogger(logger: Pick<Logger, 'warn'>): ReceiptWriter {
    return new ReceiptWriter({
      redis: this.#redis,
      prefix: this.#space,
      settings: this.#settings,
      logger,
    });
  }

  /** Records the receipt; answers whether it was written. */
  async write(head: ReceiptHead, outcome: ReceiptOutcome): Promise<boolean> {
    const psid = outcome.psid ?? null;
    const receipt: MessageReceipt = {
      ...receiptHeadFields(head),
      state: outcome.state,
      psid,
      version: outcome.version ?? null,
      queries: [],
    };
    const prefix = patientPrefix(this.#space, psid ?? head.controlId);
    const list = receiptsKey(prefix, head.controlId);
    try {
      await RECORD_RECEIPT.run(
        this.#redis,
        [list, psid === null ? list : patientMessagesKey(prefix, psid), recentMessagesKey(prefix)],
        [
          head.controlId,
          JSON.stringify(receipt),
          this.#settings.ttlSeconds,
          this.#settings.maxReceipts,
          head.at.getTime(),
          psid === null ? '0' : '1',
        ],
      );
      return true;
    } catch (error) {
      this.#logger?.warn(
        { err_code: errorCode(error), feed: head.feed, state: outcome.state },
        'message receipt not written',
      );
      return false;
    }
  }
}

/** A stable code of the failure, never its message (which might quote a key). */
function errorCode(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'code' in error) return String(error.code);
  return error instanceof Error ? error.name : 'unknown';
}
