import { z } from 'zod';
import type { CdsHooksClient } from '../config/cds-hooks-schema.ts';
import { patientKeyIdentifier } from '../config/patient-key.ts';
import { CdsPatientUnavailableError } from './cds-patient-error.ts';
import type { CdsServiceRequest } from './cds-request-schemas.ts';

const PatientSchema = z.looseObject({
  resourceType: z.literal('Patient'),
  id: z.string().optional(),
  identifier: z
    .array(z.looseObject({ system: z.string().optional(), value: z.string().optional() }))
    .optional(),
});
type Patient = z.infer<typeof PatientSchema>;

export interface PatientIdentity {
  /**
   * `fhirPatientKeySystems(config)`: the identifier systems whose value is a Patient's local id, in
   * order. Empty: the Patient's logical id is its local id.
   */
  systems: readonly string[];
  /** `cds_hooks.fhir_timeout_ms`. */
  timeoutMs: number;
}

/** The `prefetch` entry that is the Patient in context (any key; `patient` is ours). */
function prefetchedPatient(request: CdsServiceRequest): Patient | undefined {
  const entries = Object.entries(request.prefetch ?? {});
  entries.sort(([a], [b]) => (a === 'patient' ? -1 : b === 'patient' ? 1 : 0));
  for (const [, value] of entries) {
    const parsed = PatientSchema.safeParse(value);
    // Only the Patient in context: a prefetched Patient of another id is never used.
    if (parsed.success && parsed.data.id === request.context.patientId) return parsed.data;
  }
  return undefined;
}

/** The Patient read from the request's FHIR server, when the client may be read from there. */
async function fetchedPatient(
  request: CdsServiceRequest,
  client: CdsHooksClient,
  timeoutMs: number,
): Promise<Patient | undefined> {
  const server = request.fhirServer?.replace(/\/+$/, '');
  const token = request.fhirAuthorization?.access_token;
  const allowed = client.fhir_servers.map((url) => url.replace(/\/+$/, ''));
  if (server === undefined || token === undefined || !allowed.includes(server)) {
    throw new CdsPatientUnavailableError(
      'the Patient is needed: send prefetch.patient, or a fhirServer of the client’s fhir_servers with fhirAuthorization',
    );
  }
  let response: Response;
  try {
    response = await fetch(`${server}/Patient/${encodeURIComponent(request.context.patientId)}`, {
      headers: { accept: 'application/fhir+json', authorization: `Bearer ${token}` },
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (cause) {
    throw new CdsPatientUnavailableError('the FHIR server could not be reached', { cause });
  }
  if (response.status === 404 || response.status === 410) return undefined;
  if (!response.ok) {
    throw new CdsPatientUnavailableError(`the FHIR server answered ${response.status}`);
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch (cause) {
    throw new CdsPatientUnavailableError('the FHIR server answered no JSON', { cause });
  }
  const parsed = PatientSchema.safeParse(body);
  return parsed.success && parsed.data.id === request.context.patientId ? parsed.data : undefined;
}

/**
 * The hospital's local id of the patient in context, as the identity settings make it (the same
 * rule as the FHIR feed's): its logical id `context.patientId` when no identifier system is
 * configured; else the value of its first identifier of the first system that has one, read from
 * `prefetch.patient` or from the request's `fhirServer`. Undefined: no such identifier (the
 * patient is unknown here). Throws {@link CdsPatientUnavailableError} when the Patient cannot be
 * had.
 */
export async function localIdOf(
  request: CdsServiceRequest,
  client: CdsHooksClient,
  identity: PatientIdentity,
): Promise<string | undefined> {
  if (identity.systems.length === 0) return request.context.patientId;
  const patient =
    prefetchedPatient(request) ?? (await fetchedPatient(request, client, identity.timeoutMs));
  return patientKeyIdentifier(patient?.identifier ?? [], identity.systems);
}
