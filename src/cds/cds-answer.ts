import type { CdsHooksClient } from '../config/cds-hooks-schema.ts';
import type { Crosswalk } from '../identity/crosswalk.ts';
import { buildCard, type CardSource, type CdsCard } from './build-card.ts';
import type { CdsServiceDefinition } from './cds-services.ts';
import { localIdOf, type PatientIdentity } from './cds-patient.ts';
import type { CdsServiceRequest } from './cds-request-schemas.ts';
import type { KeptResults } from './kept-results.ts';
import { readVerdict } from './result-verdict.ts';

export interface CdsAnswerDeps {
  crosswalk: Pick<Crosswalk, 'findCurrent'>;
  kept: Pick<KeptResults, 'read'>;
  identity: PatientIdentity;
  source: CardSource;
  /** `cds_hooks.hide_concordant`. */
  hideConcordant: boolean;
  /** A CCSR category's description, for the summary. @defaultValue none */
  describe?: (category: string) => string | undefined;
}

/** A service call's answer, and whether the patient was known. */
export interface CdsAnswer {
  cards: CdsCard[];
  known: boolean;
}

/**
 * Answers a `patient-view` call from the kept results alone (the Clinical Graph Service is never
 * called): the patient in context → its local id (identity settings) → its service id (the
 * crosswalk, following merges) → its kept results the service shows → one card each, concordant
 * categories left out when `hide_concordant`. An unknown patient gets no card.
 */
export async function answerCall(
  service: CdsServiceDefinition,
  request: CdsServiceRequest,
  client: CdsHooksClient,
  deps: CdsAnswerDeps,
): Promise<CdsAnswer> {
  const localId = await localIdOf(request, client, deps.identity);
  const patientServiceId =
    localId === undefined ? undefined : await deps.crosswalk.findCurrent(localId);
  if (patientServiceId === undefined) return { cards: [], known: false };
  const results = (await deps.kept.read(patientServiceId)).filter((result) =>
    service.shows(result.ccsr_category),
  );
  const shown = deps.hideConcordant
    ? results.filter((result) => readVerdict(result).verdict !== 'concordant')
    : results;
  return {
    cards: shown.map((result) => buildCard(result, deps.source, deps.describe)),
    known: true,
  };
}
