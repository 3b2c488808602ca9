import { PREVENT_PRESET } from '../ccsr/preset-names.ts';
import type { Config } from './config-schema.ts';

/**
 * The validated configuration cut into the typed slices the parts below the composition root
 * take (src/app/compose-app.ts makes them once): each part sees the sections it reads and no
 * other. A slice holds the very section objects of the configuration (no copy).
 */

/**
 * The query engine (workers/concordance-queries.ts): its rules, what a record may send, and
 * Prevent (its identifier key).
 */
export type QueriesSlice = Pick<Config, 'queries' | 'privacy' | 'prevent' | 'trace'>;

/**
 * The delivery side (router, channels, webhook worker): `delivery.*`, the outbound network, and
 * `trace.*` (each delivery step's trace).
 */
export type DeliverySlice = Pick<Config, 'delivery' | 'outbound' | 'trace'> & {
  /** Whether results are kept for the CDS Hooks service, and for how long (the record's retention). */
  cds_hooks: Pick<Config['cds_hooks'], 'enabled'>;
  privacy: Pick<Config['privacy'], 'record_retention_days'>;
};

/** The client of the Clinical Graph Service: `service.*` and the outbound network. */
export type ServiceSlice = Pick<Config, 'service' | 'outbound'>;

/** Problem codes to ICD-10-CM: `terminology.*`, the outbound network, and where its cache lives. */
export type TerminologySlice = Pick<Config, 'terminology' | 'outbound' | 'redis'>;

/**
 * The ingest side (HTTP app, MLLP, FHIR intake, the update committer): its routes, tokens, the
 * feeds' settings, presets, de-identification, and the query settings a new query is opened with.
 */
export type IngestSlice = Pick<
  Config,
  | 'ingest'
  | 'admin'
  | 'hl7v2'
  | 'fhir'
  | 'presets'
  | 'privacy'
  | 'queries'
  | 'redis'
  | 'outbound'
  | 'prevent'
  | 'trace'
  | 'cds_hooks'
> & {
  /** `identity` without its secrets: only the one key across feeds (`identity.patient_key`). */
  identity: Pick<Config['identity'], 'patient_key'>;
};

export interface ConfigSlices {
  ingest: IngestSlice;
  queries: QueriesSlice;
  delivery: DeliverySlice;
  service: ServiceSlice;
  terminology: TerminologySlice;
}

/** Cuts `config` into its slices (the composition root's one reading of the whole tree). */
export function configSlices(config: Config): ConfigSlices {
  const {
    ingest,
    admin,
    hl7v2,
    fhir,
    presets,
    privacy,
    queries,
    redis,
    outbound,
    delivery,
    service,
    terminology,
    prevent,
    identity,
    trace,
    cds_hooks,
  } = config;
  return {
    ingest: {
      ingest,
      admin,
      hl7v2,
      fhir,
      presets: withPreventRule(presets, prevent),
      privacy,
      queries,
      redis,
      outbound,
      prevent,
      trace,
      cds_hooks,
      identity: { patient_key: identity.patient_key },
    },
    queries: { queries, privacy, prevent, trace },
    delivery: { delivery, outbound, trace, cds_hooks, privacy },
    service: { service, outbound },
    terminology: { terminology, outbound, redis },
  };
}

/**
 * `presets` with the `prevent` rule of `prevent.every_patient` (a rule without `when_changes`, so
 * that it is listed with the other rules and applies to every update); the section itself when
 * there is none to add, or when a rule names `prevent` already.
 */
export function withPreventRule(
  presets: Config['presets'],
  prevent: Config['prevent'],
): Config['presets'] {
  const wanted = prevent.enabled && prevent.every_patient;
  if (!wanted || presets.rules.some((rule) => rule.ccsr_category === PREVENT_PRESET)) {
    return presets;
  }
  return { ...presets, rules: [...presets.rules, { ccsr_category: PREVENT_PRESET }] };
}
