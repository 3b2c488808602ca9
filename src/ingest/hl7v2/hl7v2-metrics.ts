import type { Counter, Registry } from 'prom-client';
import { registryCounter } from '../../observability/registry-counter.ts';
import { HANDLED_TYPES } from './map-message.ts';

export type Hl7v2Outcome = 'accepted' | 'ignored' | 'rejected' | 'unavailable';

/** Distinct ignored `type` labels kept before the rest are counted as `other`. */
const MAX_OTHER_TYPES = 50;
const TYPE_LABEL = /^[A-Z0-9]{2,3}\^[A-Z0-9]{1,4}$/;

/**
 * `cw_hl7v2_messages_total{type,outcome}`. The type is the sender's text, so its label values are
 * bounded: the handled types, up to {@link MAX_OTHER_TYPES} others, then `other`; `unknown` when the
 * MSH could not be read.
 */
export class Hl7v2Metrics {
  readonly #messages: Counter<'type' | 'outcome'>;
  readonly #others = new Set<string>();
  readonly #refused: Counter;

  constructor(registry: Registry) {
    this.#refused = registryCounter(
      registry,
      'cw_mllp_connections_refused_total',
      'MLLP connections closed at once because hl7v2.mllp.max_connections were open.',
    );
    this.#messages = registryCounter(
      registry,
      'cw_hl7v2_messages_total',
      'HL7 v2 messages received (MLLP and HTTP), by MSH-9 type^trigger and outcome (accepted, ignored, rejected, unavailable).',
      ['type', 'outcome'],
    );
  }

  #label(type: string | undefined): string {
    if (type === undefined || !TYPE_LABEL.test(type))
      return type === undefined ? 'unknown' : 'other';
    if (HANDLED_TYPES.has(type) || this.#others.has(type)) return type;
    if (this.#others.size >= MAX_OTHER_TYPES) return 'other';
    this.#others.add(type);
    return type;
  }

  connectionRefused(): void {
    this.#refused.inc();
  }

  count(type: string | undefined, outcome: Hl7v2Outcome): void {
    this.#messages.inc({ type: this.#label(type), outcome });
  }
}
