import type { Counter, Registry } from 'prom-client';
import { registryCounter } from '../observability/registry-counter.ts';

/**
 * The outcomes of a CDS Hooks call: `cards` (one card or more), `no_cards` (a known patient, no
 * kept result to show), `unknown_patient`, `unauthorized` (the JWT was refused),
 * `precondition_failed` (the Patient could not be had).
 */
export type CdsCallOutcome =
  'cards' | 'no_cards' | 'unknown_patient' | 'unauthorized' | 'precondition_failed';

/** `cw_cds_calls_total{service,outcome}` and `cw_cds_feedback_total{service,outcome}`. */
export class CdsMetrics {
  readonly #calls: Counter<'service' | 'outcome'>;
  readonly #feedback: Counter<'service' | 'outcome'>;

  constructor(registry: Registry) {
    this.#calls = registryCounter(
      registry,
      'cw_cds_calls_total',
      'CDS Hooks service calls by service and outcome: cards, no_cards, unknown_patient, unauthorized, precondition_failed.',
      ['service', 'outcome'],
    );
    this.#feedback = registryCounter(
      registry,
      'cw_cds_feedback_total',
      'CDS Hooks feedback entries by service and outcome (accepted, overridden).',
      ['service', 'outcome'],
    );
  }

  call(service: string, outcome: CdsCallOutcome): void {
    this.#calls.inc({ service, outcome });
  }

  feedback(service: string, outcome: 'accepted' | 'overridden', n = 1): void {
    if (n > 0) this.#feedback.inc({ service, outcome }, n);
  }
}
