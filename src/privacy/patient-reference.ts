import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';

/**
 * How the audit log names a patient: `hmac:` + HMAC-SHA256 (the crosswalk lookup key) of the local
 * id with its own domain prefix, so that it equals no crosswalk key name. Whoever holds
 * `CROSSWALK_KEY` can recompute it from a local id (`audit list --patient-id`); nobody can turn it
 * back into one. It changes when `CROSSWALK_KEY` is rotated.
 */
export function auditPatientRef(keys: Pick<CrosswalkKeys, 'lookup'>, localId: string): string {
  return `hmac:${keys.lookup(`audit v1|${localId}`)}`;
}
