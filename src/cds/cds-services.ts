import type { CdsHooksConfig } from '../config/cds-hooks-schema.ts';
import { PREVENT_PRESET } from '../ccsr/preset-names.ts';

/** One `patient-view` service of the discovery answer, and which kept results it shows. */
export interface CdsServiceDefinition {
  hook: 'patient-view';
  id: string;
  title: string;
  description: string;
  prefetch: { patient: string };
  /** The kept results this service answers from (not part of the discovery answer). */
  shows: (category: string) => boolean;
}

export const CONCORDANCE_SERVICE_ID = 'concordance-results';
export const PREVENT_SERVICE_ID = 'prevent-recommendations';

/** What each service asks the EHR to prefetch: the Patient (its identifiers name the local id). */
const PREFETCH = { patient: 'Patient/{{context.patientId}}' };

/**
 * The services listed at `GET /cds-services`: the latest guideline concordance results, and
 * Prevent's recommendations when `cds_hooks.prevent_service` and `prevent.enabled` are on.
 */
export function cdsServices(
  cds: Pick<CdsHooksConfig, 'prevent_service'>,
  preventEnabled: boolean,
): CdsServiceDefinition[] {
  const services: CdsServiceDefinition[] = [
    {
      hook: 'patient-view',
      id: CONCORDANCE_SERVICE_ID,
      title: 'Guideline concordance',
      description:
        'The latest guideline concordance result of each problem-list category of the patient, as the Clinical Graph Service last answered it (one card per category).',
      prefetch: PREFETCH,
      shows: (category) => category !== PREVENT_PRESET,
    },
  ];
  if (cds.prevent_service && preventEnabled) {
    services.push({
      hook: 'patient-view',
      id: PREVENT_SERVICE_ID,
      title: 'Healthy-behaviour recommendations',
      description:
        'The latest Prevent recommendations of the patient, as the Clinical Graph Service last answered them.',
      prefetch: PREFETCH,
      shows: (category) => category === PREVENT_PRESET,
    });
  }
  return services;
}

/** The discovery answer (CDS Hooks 2.0, "Discovery"). */
export function discoveryAnswer(services: readonly CdsServiceDefinition[]) {
  return {
    services: services.map(({ hook, id, title, description, prefetch }) => ({
      hook,
      id,
      title,
      description,
      prefetch,
    })),
  };
}
