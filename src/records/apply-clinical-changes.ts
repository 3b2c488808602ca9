import { isDeepStrictEqual } from 'node:util';
import type { ClinicalChange, ReportedItem } from './clinical-change.ts';
import type { ClinicalItem, ClinicalRecord, PatientIdentityFacets } from './clinical-record.ts';

const LIST_FACETS = ['race', 'names', 'identifiers', 'phones', 'addresses', 'emails'] as const;

/**
 * Whether a reported item says what the stored one says: the same fields and values, in any key
 * order (a stored item comes back from its sealed JSON with its fields in another order than the
 * mapping builds them), fields left undefined counting as absent, as in the stored JSON.
 */
const sameItem = (a: ClinicalItem | undefined, b: ReportedItem) => {
  if (a === undefined) return false;
  const { version: _version, ...rest } = a;
  return isDeepStrictEqual(rest, JSON.parse(JSON.stringify(b)));
};

function mergeFacets(
  patient: PatientIdentityFacets,
  facets: Partial<PatientIdentityFacets>,
): { patient: PatientIdentityFacets; changed: boolean } {
  const next: PatientIdentityFacets = { ...patient };
  for (const key of LIST_FACETS) {
    const added = (facets[key] ?? []).filter((v) => v !== '' && !patient[key].includes(v));
    if (added.length > 0) next[key] = [...patient[key], ...added];
  }
  for (const key of ['birthDate', 'gender'] as const) {
    const value = facets[key];
    if (value !== undefined && value !== '') next[key] = value;
  }
  return { patient: next, changed: JSON.stringify(next) !== JSON.stringify(patient) };
}

/**
 * Applies a message's changes to a record: a pure function, so that the store can retry it on a
 * newer record when another writer got there first. Items that change are stamped `version`;
 * `changed` is false when the message said nothing new (a resent message changes nothing).
 */
export function applyClinicalChanges(
  record: ClinicalRecord,
  changes: readonly ClinicalChange[],
  version: number,
): { record: ClinicalRecord; changed: boolean } {
  let items = { ...record.items };
  let patient = record.patient;
  let changed = false;
  const upsert = (item: ReportedItem) => {
    if (sameItem(items[item.key], item)) return;
    items[item.key] = { ...item, version };
    changed = true;
  };
  const facets = (value: Partial<PatientIdentityFacets> | undefined) => {
    if (value === undefined) return;
    const merged = mergeFacets(patient, value);
    patient = merged.patient;
    changed ||= merged.changed;
  };
  for (const change of changes) {
    switch (change.type) {
      case 'upsert':
        upsert(change.item);
        break;
      case 'remove':
        if (change.key in items) {
          const { [change.key]: _removed, ...rest } = items;
          items = rest;
          changed = true;
        }
        break;
      case 'patient':
        facets(change.facets);
        break;
      case 'replace': {
        const keep = new Set(change.items.map((item) => item.key));
        for (const key of Object.keys(items)) {
          if (!keep.has(key)) {
            const { [key]: _removed, ...rest } = items;
            items = rest;
            changed = true;
          }
        }
        change.items.forEach(upsert);
        facets(change.facets);
        break;
      }
    }
  }
  return { record: { items, patient }, changed };
}
