import { z } from 'zod';
import type { CcsrTables } from '../../ccsr/ccsr-tables.ts';
import { AssembledPatientSchema } from '../../interface/assembled-patient.ts';
import { pathDeeperThan, type JsonPath } from '../../records/json-depth.ts';
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

/**
 * How deep a node's `metadata` may nest (the metadata object itself is level 1). Only flat values
 * of allowed keys are ever sent; the bound keeps every walker over sender input shallow.
 */
export const MAX_METADATA_DEPTH = 8;

/** How deep `assembled_patient` may nest as a whole (itself level 1; its metadata sits at 4). */
export const MAX_RECORD_DEPTH = 16;

/**
 * Paths (below `metadata`) of every identifying key, at any depth: at each object its identifying
 * keys (last first), then its other members in order, depth first. Recursive, and only ever called
 * once the depth is known to be bounded (see `MAX_METADATA_DEPTH`); a path is built only for a key
 * found.
 */
function identifyingKeys(value: unknown, fields: ReadonlySet<string>): JsonPath[] {
  const found: JsonPath[] = [];
  const at: JsonPath = [];
  const walk = (current: unknown): void => {
    if (typeof current !== 'object' || current === null) return;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        at.push(i);
        walk(current[i]);
        at.pop();
      }
      return;
    }
    const keys = Object.keys(current);
    const identifying = keys.map((key) => fields.has(key.toLowerCase()));
    for (let i = keys.length - 1; i >= 0; i--) {
      if (identifying[i] === true) found.push([...at, keys[i] as string]);
    }
    for (let i = 0; i < keys.length; i++) {
      if (identifying[i] === true) continue;
      const key = keys[i] as string;
      at.push(key);
      walk((current as Record<string, unknown>)[key]);
      at.pop();
    }
  };
  walk(value);
  return found;
}

/** The record as the OpenAPI description names it (a component of its own). */
const AssembledPatientRecord = AssembledPatientSchema.meta({
  id: 'AssembledPatient',
  description:
    'The patient’s de-identified record (nodes, the relationships between them, demographics); ' +
    'required in an update of a patient never seen. ' +
    `A node's \`metadata\` is a flat map (at most ${MAX_METADATA_DEPTH} levels deep) and holds ` +
    'no identifying field.',
});

/** The body of `POST /v1/record-updates`; unknown top-level fields are refused. */
export function recordUpdateBodySchema({ tables, identifyingFields }: RecordUpdateBodyOptions) {
  const fields = new Set(identifyingFields.map((field) => field.toLowerCase()));
  const assembledPatient = AssembledPatientRecord.superRefine((patient, ctx) => {
    let tooDeep = false;
    patient.nodes.forEach((node, i) => {
      const deep = pathDeeperThan(node.metadata, MAX_METADATA_DEPTH);
      if (deep === undefined) return;
      tooDeep = true;
      ctx.addIssue({
        code: 'custom',
        path: ['nodes', i, 'metadata', ...deep],
        message: `nested deeper than ${MAX_METADATA_DEPTH} levels: metadata is a flat map of values`,
      });
    });
    const deep = tooDeep ? undefined : pathDeeperThan(patient, MAX_RECORD_DEPTH);
    if (deep !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: deep,
        message: `nested deeper than ${MAX_RECORD_DEPTH} levels`,
      });
    }
    if (tooDeep || deep !== undefined) return;
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
    event_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe(
        'The sender’s id of this update; the same id again within `ingest.idempotency_ttl_s` ' +
          'is a duplicate (200). Generated when absent.',
      ),
    occurred_at: z.iso.datetime({ offset: true }).optional().describe('When the change happened.'),
    source: z.string().max(100).optional().describe('The sending system (a metrics label).'),
    assembled_patient: assembledPatient.optional(),
    changes: z
      .array(z.string().min(1).max(100))
      .max(100)
      .optional()
      .describe('Kinds of data the update changed (`Observation`, `Condition`): rules use them.'),
    ccsr_categories: z
      .array(ccsrCategorySchema(tables))
      .max(MAX_EXPLICIT_CATEGORIES)
      .optional()
      .describe('Categories to run now, once, without registering them.'),
  });
}

export type RecordUpdateBody = z.output<ReturnType<typeof recordUpdateBodySchema>>;

/**
 * The body of `POST /v1/record-updates/batch` once parsed (a JSON array, or NDJSON's lines): at
 * least one item, each exactly as the single route's body. The item count is bounded before (413).
 */
export function recordUpdateBatchSchema(options: RecordUpdateBodyOptions) {
  return z.array(recordUpdateBodySchema(options)).min(1, 'a batch holds at least one update');
}
