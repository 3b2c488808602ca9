import { Gauge, type Registry } from 'prom-client';
import type { DemographicsWait } from './demographics-wait.ts';

/**
 * `cw_queries_waiting_for_demographics`: (patient, category) keys whose query waits for a birth
 * date, read from Redis on every scrape (left out when Redis does not answer).
 */
export function registerDemographicsWaitGauge(registry: Registry, wait: DemographicsWait): void {
  if (registry.getSingleMetric('cw_queries_waiting_for_demographics') !== undefined) return;
  new Gauge({
    name: 'cw_queries_waiting_for_demographics',
    help: 'Queries (patient, category) waiting for the patient birth date; they run on the next update that brings it, or end failed (ERR_RECORD_WAITING_EXPIRED) after queries.demographics_wait_s.',
    registers: [registry],
    async collect() {
      try {
        this.set(await wait.count());
      } catch {
        this.reset();
      }
    },
  });
}
