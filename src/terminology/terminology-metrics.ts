import { Counter, type Registry } from 'prom-client';

/** Where a problem's ICD-10-CM coding came from. */
export type MappingSource = 'icd10cm' | 'rf2_file' | 'csv_file' | 'server' | 'embedded';

/** The terminology step's counters (reused when a registry already has them). */
export class TerminologyMetrics {
  readonly mapped: Counter<'source'>;
  readonly serverErrors: Counter;

  constructor(registry: Registry) {
    const mapped = registry.getSingleMetric('cw_problems_mapped_total');
    this.mapped =
      mapped instanceof Counter
        ? (mapped as Counter<'source'>)
        : new Counter({
            name: 'cw_problems_mapped_total',
            help: 'Problems given ICD-10-CM codes by the terminology step, by source (rf2_file, csv_file, server, embedded).',
            labelNames: ['source'],
            registers: [registry],
          });
    const errors = registry.getSingleMetric('cw_terminology_server_errors_total');
    this.serverErrors =
      errors instanceof Counter
        ? errors
        : new Counter({
            name: 'cw_terminology_server_errors_total',
            help: 'ConceptMap/$translate calls that failed (unreachable, non-2xx, not Parameters); the problem falls through to the next source.',
            registers: [registry],
          });
  }
}
