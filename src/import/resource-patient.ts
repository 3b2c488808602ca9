/**
 * The logical id of the Patient a Bulk Data resource belongs to: a Patient's own id, else the
 * `Patient/<id>` of its `subject` or `patient` reference (the fields `map-resource.ts` reads).
 * Undefined when it names no Patient (a Group's member list, an unmapped resource).
 */
export function patientIdOf(resource: Record<string, unknown>): string | undefined {
  if (resource['resourceType'] === 'Patient') {
    const id = resource['id'];
    return typeof id === 'string' && id.length > 0 ? id : undefined;
  }
  for (const field of ['subject', 'patient']) {
    const value = resource[field];
    if (typeof value !== 'object' || value === null) continue;
    const reference = (value as { reference?: unknown }).reference;
    if (typeof reference !== 'string') continue;
    const match = /(?:^|\/)Patient\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/.exec(reference);
    if (match?.[1] !== undefined) return match[1];
  }
  return undefined;
}
