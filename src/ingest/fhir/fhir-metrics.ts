import { Counter, type Registry } from 'prom-client';

/** The FHIR ingest's counters, on the ingest app's registry (reused when a second app shares it). */
export class FhirMetrics {
  readonly gaps: Counter;

  constructor(registry: Registry) {
    const existing = registry.getSingleMetric('cw_fhir_event_gaps_total');
    this.gaps =
      existing instanceof Counter
        ? existing
        : new Counter({
            name: 'cw_fhir_event_gaps_total',
            help: 'Gaps in FHIR subscription event numbers (missed notifications) detected; each starts a $status/$events recovery.',
            registers: [registry],
          });
  }
}
