/**
 * Something else that holds data of a patient and forgets it on a purge (pending webhook events
 * and dead letters: `WebhookDeliveryStore.purgePatient`). `erase` is idempotent and returns how
 * many items it removed; its `name` labels the count in the purge report and the audit entry.
 */
export interface PatientEraser {
  readonly name: string;
  erase(patientServiceId: string): Promise<number>;
}
