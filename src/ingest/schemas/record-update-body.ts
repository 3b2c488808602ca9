import { z } from 'zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { AssembledPatientSchema } from '../../interface/assembled-patient.ts';
import { ccsrCategorySchema } from './ccsr-category.ts';
import { PatientIdSchema } from './patient-params.ts';

/** Most categories one update may ask for explicitly: more is a sender's bug, not a need. */
export const MAX_EXPLICIT_CATEGORIES = 100;

export interface RecordUpdateBodyOptions {
  tables: Pick<CcsrTables, 'isCategory'>;
  /**
   * Keys refused anywhere inside a node's `metadata` (`config.privacy.identifying_fields`),
   * compared case-insensitively: a record carrying them was not de-identified.
   */
  identifyingFields: readonly string[];
}

type Path = (string | number)[];

/** Paths (below `metadata`) of every identifying key, at any depth. */
function identifyingKeys(value: unknown, fields: ReadonlySet<string>, at: Path = []): Path[] {
  if (Array.isArray(value)) {
    return value.flatMap((item, i) => identifyingKeys(item, fields, [...at, i]));
  }
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    fields.has(key.toLowerCase()) ? [[...at, key]] : identifyingKeys(inner, fields, [...at, key]),
  );
}

/** The body of `POST /v1/record-updates`; unknown top-level fields are refused. */
export function recordUpdateBodySchema({ tables, identifyingFields }: RecordUpdateBodyOptions) {
  const fields = new Set(identifyingFields.map((field) => field.toLowerCase()));
  const assembledPatient = AssembledPatientSchema.superRefine((patient, ctx) => {
    patient.nodes.forEach((node, i) => {
      for (const path of identifyingKeys(node.metadata, fields)) {
        ctx.addIssue({
          code: 'custom',
          path: ['nodes', i, 'metadata', ...path],
          message: 'an identifying field: de-identify the record before sending it',
        });
      }
    });
  });

  return z.strictObject({
    patient_id: PatientIdSchema,
    /** The sender's id of this update; the same id again within the window is a duplicate. */
    event_id: z.string().min(1).max(200).optional(),
    occurred_at: z.iso.datetime({ offset: true }).optional(),
    source: z.string().max(100).optional(),
    assembled_patient: assembledPatient.optional(),
    /** Kinds of data the update changed (`Observation`, `Condition`): presets rules use them. */
    changes: z.array(z.string().min(1).max(100)).max(100).optional(),
    /** Categories to run now, once, without registering them. */
    ccsr_categories: z.array(ccsrCategorySchema(tables)).max(MAX_EXPLICIT_CATEGORIES).optional(),
  });
}

export type RecordUpdateBody = z.output<ReturnType<typeof recordUpdateBodySchema>>;
