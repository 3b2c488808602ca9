import { LuaScript } from '../queues/lua-script.ts';
import { patientPrefix, type KeySpace } from '../queues/partitions.ts';
import type { RedisClient } from '../queues/redis-client.ts';
import { patientMessagesKey, recentMessagesKey } from '../trace/trace-keys.ts';
import type { PatientEraser } from './patient-eraser.ts';
import { globLiteral, scanKeys } from './redis-keys.ts';

const ERASE_PATIENT_TRACE = LuaScript.load(
  new URL('./lua/erase-patient-trace.lua', import.meta.url),
);

/** Query traces per script call (the keys of one call). */
const BATCH = 500;

/** What one erase removed, by kind. */
export interface TraceErased {
  receipts: number;
  recent: number;
  query_traces: number;
  delivery_traces: number;
  index: number;
}

/**
 * Removes a patient's message trace (docs/message-trace.md, purge and opt-out): its receipts (of
 * every control id its index names, this patient's receipts only), its index, its control ids
 * from the recent set once they have no receipt left, its query traces (`P:trace:q:<psid>:*`,
 * found by a scan of its partition) and the delivery traces they name. One script per batch of
 * query traces; idempotent. As a {@link PatientEraser} (`trace`) it counts everything removed.
 */
export class PatientTraceEraser implements PatientEraser {
  readonly name = 'trace';
  readonly #redis: RedisClient;
  readonly #space: KeySpace;

  constructor({ redis, prefix }: { redis: RedisClient; prefix: KeySpace }) {
    this.#redis = redis;
    this.#space = prefix;
  }

  async erase(patientServiceId: string): Promise<number> {
    const erased = await this.eraseTrace(patientServiceId);
    return erased.receipts + erased.query_traces + erased.delivery_traces + erased.index;
  }

  /** Erases the patient's trace; what it removed, by kind. */
  async eraseTrace(patientServiceId: string): Promise<TraceErased> {
    const prefix = patientPrefix(this.#space, patientServiceId);
    const queryKeys = await scanKeys(
      this.#redis,
      `${globLiteral(prefix)}:trace:q:${globLiteral(patientServiceId)}:*`,
    );
    const total: TraceErased = {
      receipts: 0,
      recent: 0,
      query_traces: 0,
      delivery_traces: 0,
      index: 0,
    };
    const fixed = [patientMessagesKey(prefix, patientServiceId), recentMessagesKey(prefix)];
    // At least one call: the receipts and the index go even when no query trace is left.
    for (let i = 0; i === 0 || i < queryKeys.length; i += BATCH) {
      const [receipts, recent, queries, deliveries, index] = (await ERASE_PATIENT_TRACE.run(
        this.#redis,
        [...fixed, ...queryKeys.slice(i, i + BATCH)],
        [prefix, patientServiceId],
      )) as number[];
      total.receipts += receipts ?? 0;
      total.recent += recent ?? 0;
      total.query_traces += queries ?? 0;
      total.delivery_traces += deliveries ?? 0;
      total.index += index ?? 0;
    }
    return total;
  }
}
