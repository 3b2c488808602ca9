import { isPreventPreset } from '../ccsr/preset-names.ts';
import type { QueriesSlice } from '../config/config-slices.ts';
import type { Crosswalk } from '../identity/crosswalk.ts';
import { preventIdentifier } from '../identity/prevent-identifier.ts';
import type { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import { assemblePatient } from '../records/assemble-patient.ts';
import type { DemographicsWait } from '../records/demographics-wait.ts';
import { knownIdentifiers } from '../records/known-identifiers.ts';
import { prepareForService } from '../records/prepare-for-service.ts';
import { buildPreventPayload } from '../records/prevent-payload.ts';
import type { RecordStore, StoredRecord } from '../records/record-store.ts';
import type { ServiceClient } from '../service/create-service-client.ts';
import type { ClaimedQuery } from './submission-store.ts';
import { PREVENT_NOT_CONFIGURED, PreventNotConfiguredError, runPrevent } from './prevent-run.ts';
import type { Prepared } from './query-submission.ts';

export interface QueryPreparerDeps {
  /** `privacy.*` and `prevent.*`. */
  config: Pick<QueriesSlice, 'privacy' | 'prevent'>;
  records: RecordStore;
  crosswalk: Crosswalk;
  demographics: DemographicsWait;
  /** Prevent's requests are made with it when a run is sent. */
  client: ServiceClient;
  metrics?: PipelineMetrics;
  now: () => number;
}

/**
 * What a claimed query sends, made from the stored record: the de-identified record for a
 * concordance query (a record sent as JSON takes precedence; else the feeds' record is assembled
 * now), or the requests of a Prevent run (the reserved preset `prevent`, docs/prevent.md).
 * `missing` when there is no record or no local id. Throws the record's errors (not assemblable,
 * an identifier leak) and, for Prevent without `PREVENT_ID_KEY`, PreventNotConfiguredError.
 */
export function queryPreparer(deps: QueryPreparerDeps): (query: ClaimedQuery) => Promise<Prepared> {
  const { config, records, crosswalk, demographics, client, metrics, now } = deps;
  const prevent = config.prevent;
  const identify =
    prevent.enabled && prevent.id_key !== undefined ? preventIdentifier(prevent.id_key) : undefined;

  /** A Prevent run: its payload built from the stored record now, its requests made when sent. */
  const preparePrevent = async (
    query: ClaimedQuery,
    stored: StoredRecord,
    localId: string,
  ): Promise<Prepared> => {
    if (identify === undefined) throw new PreventNotConfiguredError(PREVENT_NOT_CONFIGURED);
    const { record, clinical } = stored;
    const source =
      record !== undefined
        ? { assembled: record }
        : clinical !== undefined
          ? { clinical }
          : undefined;
    if (source === undefined) return { kind: 'missing' };
    const payload = buildPreventPayload(source, {
      now: new Date(now()),
      localId,
      knownIdentifiers: clinical ? knownIdentifiers(localId, clinical.patient) : [],
    });
    if (record === undefined)
      await demographics.release(query.patientServiceId, query.ccsrCategory);
    const run = { patientServiceId: query.patientServiceId, localId, payload };
    const ports = {
      client,
      ids: crosswalk,
      identify,
      onRegistered: () => metrics?.preventRegistrations.inc(),
    };
    return {
      kind: 'call',
      recordVersion: stored.version,
      call: (signal) => runPrevent(ports, run, signal),
    };
  };

  return async (query) => {
    const psid = query.patientServiceId;
    const stored = records.opened(psid, query.record);
    const localId = crosswalk.openLocalId(psid, query.sealedLocalId);
    if (stored === undefined || localId === undefined) return { kind: 'missing' };
    if (isPreventPreset(query.ccsrCategory)) return preparePrevent(query, stored, localId);
    const { record, clinical } = stored;
    let assembled = record;
    if (assembled === undefined) {
      if (clinical === undefined) return { kind: 'missing' };
      assembled = assemblePatient(clinical, { now: new Date(now()) });
      await demographics.release(psid, query.ccsrCategory);
    }
    const payload = await prepareForService(assembled, {
      localId,
      knownIdentifiers: clinical ? knownIdentifiers(localId, clinical.patient) : [],
      identifyingFields: config.privacy.identifying_fields,
      metadataAllowedKeys: config.privacy.metadata_allowed_keys,
      onRemoved: (kind, count) => metrics?.freeTextRemoved.inc({ kind }, count),
      opaqueFhirId: (fhirId) => crosswalk.opaqueFhirId(psid, fhirId),
    });
    return { kind: 'payload', payload, recordVersion: stored.version };
  };
}
