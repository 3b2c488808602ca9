import type { PreventRequest, PreventResponse } from '../interface/prevent.ts';
import { ConcordanceError } from '../errors/concordance-error.ts';
import type { PreventPayload } from '../records/prevent-payload.ts';
import type { ServiceClient } from '../service/create-service-client.ts';
import { ServiceNotFoundError } from '../service/errors/service-not-found-error.ts';

/**
 * A Prevent run came to a worker without `PREVENT_ID_KEY` (or with Prevent off): the patient
 * cannot be registered, so nothing is sent and the run ends `failed`.
 */
export class PreventNotConfiguredError extends ConcordanceError {
  static readonly code = 'ERR_PREVENT_NOT_CONFIGURED';
  readonly code = PreventNotConfiguredError.code;
}

/** The message of a {@link PreventNotConfiguredError}. */
export const PREVENT_NOT_CONFIGURED =
  'Prevent is not configured on this worker (prevent.enabled, PREVENT_ID_KEY); not sent';

/** Where the id Prevent registered a patient under is kept (the crosswalk, see `Crosswalk`). */
export interface PreventIds {
  preventPatientIdOf(localId: string, patientServiceId: string): Promise<string | undefined>;
  keepPreventPatientId(
    localId: string,
    patientServiceId: string,
    preventPatientId: string,
  ): Promise<boolean>;
}

export interface PreventRunDeps {
  client: Pick<ServiceClient, 'prevent'>;
  ids: PreventIds;
  /** The `unique_patient_identifier` of a local id (`preventIdentifier(PREVENT_ID_KEY)`). */
  identify: (localId: string) => string;
  /** Told of each registration made (not of an id found in the crosswalk). */
  onRegistered?: () => void;
}

/** One patient's Prevent run: who (our ids) and what (the de-identified payload). */
export interface PreventRunInput {
  patientServiceId: string;
  localId: string;
  payload: PreventPayload;
}

/**
 * Runs Prevent for one patient (interface sections 4.3 and 5.4): the patient is registered first
 * when the crosswalk holds no Prevent id for it (`POST /v1/patient` with the keyed identifier,
 * never the local id; the id answered is kept, sealed), then `POST /v1/patient/{id}` with the
 * payload. When the service no longer knows the id (404: its registry was reset), the patient is
 * registered again once, under the same identifier. The service's errors are thrown as they are:
 * the query lifecycle decides (retry, hold, end).
 */
export async function runPrevent(
  deps: PreventRunDeps,
  input: PreventRunInput,
  signal: AbortSignal,
): Promise<PreventResponse> {
  const { client, ids } = deps;
  const { patientServiceId, localId } = input;
  const register = async () => {
    const id = await client.prevent.registerPatient(deps.identify(localId), { signal });
    await ids.keepPreventPatientId(localId, patientServiceId, id);
    deps.onRegistered?.();
    return id;
  };
  const recommend = (id: string) => {
    const request: PreventRequest = { patient_service_id: id, ...input.payload };
    return client.prevent.recommend(request, { signal });
  };
  const known = await ids.preventPatientIdOf(localId, patientServiceId);
  if (known === undefined) return recommend(await register());
  try {
    return await recommend(known);
  } catch (err) {
    if (!(err instanceof ServiceNotFoundError)) throw err;
    return recommend(await register());
  }
}
