import { z } from 'zod';
import { PRESET_SOURCES } from '../../presets/preset-source.ts';

/**
 * The ingest routes' answers, as their response schemas declare them: the OpenAPI description is
 * generated from these (see `ingest-openapi.ts`), and the zod-typed routes' replies are checked
 * against them by the compiler. They are never applied to an answer at run time (the app's
 * serializer sends what the handler gives), so a field added to an answer must be added here: the
 * OpenAPI test validates real answers against the description. The `id`s name the schemas in
 * `components.schemas`.
 */

const isoTime = z.iso.datetime({ offset: true });

/** No body (204): described without content. */
export const NO_CONTENT = z.undefined();

/** `{status}` of `/healthz`, `/readyz` and the FHIR routes. */
export const statusAnswer = <S extends string>(status: S) =>
  z.object({ status: z.literal(status) });

/** `{status: "ok"}` of the FHIR routes. */
export const FHIR_OK = statusAnswer('ok').meta({ description: 'Applied (durable).' });

export const ScheduledQuerySchema = z
  .object({
    ccsr_category: z.string(),
    job_id: z.string().describe('The queue job that will run the query.'),
    coalesced: z
      .boolean()
      .describe('True when the update joined a query that an earlier update had opened.'),
  })
  .meta({ id: 'ScheduledQuery' });

export const RecordUpdateAcceptedSchema = z
  .object({
    event_id: z.string().describe('The sender’s `event_id`, or the one generated for it.'),
    patient_service_id: z.string().describe('The patient’s pseudonymous id in this service.'),
    queries: z
      .array(ScheduledQuerySchema)
      .describe('The queries the update opened (none when the same record was sent again).'),
  })
  .meta({ id: 'RecordUpdateAccepted' });

export const RecordUpdateDuplicateSchema = z
  .object({ duplicate: z.literal(true), event_id: z.string() })
  .meta({ id: 'RecordUpdateDuplicate' });

export const RecordUpdateBatchAnswerSchema = z
  .object({
    accepted: z.int().min(0),
    duplicates: z.int().min(0),
    results: z
      .array(z.union([RecordUpdateAcceptedSchema, RecordUpdateDuplicateSchema]))
      .describe('One result per item, in the order of the batch.'),
  })
  .meta({ id: 'RecordUpdateBatchAnswer' });

/** A registered preset (or one from the problem list), as stored. */
const storedPreset = {
  ccsr_category: z.string(),
  source: z.enum(PRESET_SOURCES),
  created_at: z.string().describe('When the preset was first stored (ISO 8601).'),
};

export const RegisteredPresetSchema = z
  .object({ patient_service_id: z.string(), ...storedPreset })
  .meta({ id: 'RegisteredPreset' });

export const PresetListSchema = z
  .object({
    patient_service_id: z.string(),
    presets: z.array(
      z.union([
        z.object(storedPreset),
        z
          .object({
            ccsr_category: z.string(),
            source: z.literal('rule'),
            when_changes: z.array(z.string()).optional(),
          })
          .describe('A rule of `presets.rules`: it applies to every patient.'),
      ]),
    ),
  })
  .meta({ id: 'PresetList' });

/** What every patient administration answer holds: its audit entry, and the patient. */
const audited = {
  request_id: z.string().describe('The audit entry of this call.'),
  patient_service_id: z.string(),
};

export const PurgeAnswerSchema = z
  .object({
    purged: z.literal(true),
    request_id: audited.request_id,
    counts: z.record(z.string(), z.int().min(0)).describe('What was erased, by store.'),
    kept: z
      .array(z.string())
      .describe('Kept on purpose: `["crosswalk", "opt_out"]` for an opted-out patient, else `[]`.'),
  })
  .meta({ id: 'PurgeAnswer' });

export const OptOutAnswerSchema = z
  .object({
    ...audited,
    opted_out: z.literal(true),
    opted_out_at: isoTime,
    queries_cancelled: z.int().min(0).describe('Queries of the patient that had not started.'),
  })
  .meta({ id: 'OptOutAnswer' });

export const OptInAnswerSchema = z
  .object({
    ...audited,
    opted_out: z.literal(false),
    was_opted_out: z.boolean().describe('False when no opt-out was in force (nothing changed).'),
  })
  .meta({ id: 'OptInAnswer' });

export const FhirBundleAnswerSchema = z
  .object({
    mode: z.enum(['merge', 'replace']),
    patients: z.array(
      z.object({
        patient_service_id: z.string(),
        version: z.int().min(0),
        changed: z.boolean(),
      }),
    ),
    patient_service_id: z.string().optional().describe('With one patient only: as in `patients`.'),
    version: z.int().min(0).optional().describe('With one patient only: as in `patients`.'),
  })
  .meta({ id: 'FhirBundleAnswer' });
