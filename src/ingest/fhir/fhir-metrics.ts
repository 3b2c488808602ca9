import { Counter, type Registry } from 'prom-client';

/** Why a notification, or a resource in it, was acknowledged without changing any record. */
export type FhirIgnoredReason =
  /** A resource of a type we do not use (Encounter, DiagnosticReport…). */
  | 'resource_type'
  /** A notification (or rest-hook call) that carried or named nothing we use: an unused topic. */
  | 'notification'
  /** An identifier-only focus the FHIR server found no resource for. */
  | 'focus_not_found'
  /** An identifier-only focus the FHIR server found several resources for. */
  | 'focus_ambiguous'
  /** An identifier-only focus without a type we use. */
  | 'focus_unresolvable'
  /** A delete of a Patient we cannot name locally (see docs/clinical-feeds.md: FHIR deletes). */
  | 'delete_unresolvable'
  /** A delete of a patient we never saw. */
  | 'delete_unknown_patient'
  /** A transaction or batch entry that reads (GET, HEAD): nothing to ingest. */
  | 'bundle_read';

function counter(registry: Registry, name: string, help: string, labelNames: string[] = []) {
  const existing = registry.getSingleMetric(name);
  return existing instanceof Counter
    ? existing
    : new Counter({ name, help, labelNames, registers: [registry] });
}

/** The FHIR ingest's counters, on the ingest app's registry (reused when a second app shares it). */
export class FhirMetrics {
  readonly gaps: Counter;
  readonly ignored: Counter;
  readonly deletes: Counter;

  constructor(registry: Registry) {
    this.gaps = counter(
      registry,
      'cw_fhir_event_gaps_total',
      'Gaps in FHIR subscription event numbers (missed notifications) detected; each starts a $status/$events recovery.',
    );
    this.ignored = counter(
      registry,
      'cw_fhir_ignored_total',
      'FHIR notifications and resources acknowledged (2xx) without changing a record, by reason.',
      ['reason'],
    );
    this.deletes = counter(
      registry,
      'cw_fhir_patient_deletes_total',
      'FHIR Patient deletes that purged a patient (as HL7 A23 does).',
    );
  }

  ignore(reason: FhirIgnoredReason, count = 1): void {
    if (count > 0) this.ignored.inc({ reason }, count);
  }
}
