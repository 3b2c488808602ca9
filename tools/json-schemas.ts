/**
 * The JSON Schemas (draft 2020-12) published in docs/schemas/ for the hospital's integration
 * teams, generated from the zod schemas the code sends by:
 *
 * - `result-event.schema.json`: the result event, whatever event union
 *   `src/interface/result-event.ts` exports as `ResultEventSchema`;
 * - `webhook-payload.schema.json`: the body of a webhook request: that event as the delivery
 *   router hands it to the channels, with `changed` always set;
 * - `webhook-headers.schema.json`: the headers of a webhook request (`WebhookHeadersSchema`).
 *
 * Usage: `npm run schemas` writes them; `npm run schemas -- --check` exits 1 when a checked-in
 * file differs from what the code generates (tools/json-schemas.test.ts checks the same).
 * After a change to the event schemas, run `npm run schemas` and commit docs/schemas/.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { format, resolveConfig } from 'prettier';
import { z } from 'zod';
import { ResultEventSchema } from '../src/interface/result-event.ts';
import { WebhookHeadersSchema } from '../src/delivery/webhook-headers.ts';

/** Where the schemas are checked in. */
export const SCHEMA_DIR = fileURLToPath(new URL('../docs/schemas/', import.meta.url));

/** The file names of the published schemas. */
export const SCHEMA_FILES = {
  resultEvent: 'result-event.schema.json',
  webhookPayload: 'webhook-payload.schema.json',
  webhookHeaders: 'webhook-headers.schema.json',
} as const;

/**
 * An event schema as the webhook sends it: the router marks every event it hands over `changed`
 * (true or false), so that field is always there. Works on one event object and on a union of
 * them (a discriminated union stays one, on the same key), so a new event type in the exported
 * union needs nothing here.
 */
export function asSent(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodObject) return schema.extend({ changed: z.boolean() });
  if (schema instanceof z.ZodDiscriminatedUnion) {
    const options = (schema.options as z.ZodType[]).map(asSent);
    return z.discriminatedUnion(
      schema._zod.def.discriminator,
      options as [z.ZodObject, ...z.ZodObject[]],
    );
  }
  if (schema instanceof z.ZodUnion) {
    return z.union((schema.options as z.ZodType[]).map(asSent));
  }
  throw new Error(
    `json-schemas: cannot make the webhook payload of a ${schema._zod.def.type} schema: ` +
      'the event schema must be an object or a union of objects',
  );
}

interface SchemaDocument {
  file: string;
  title: string;
  description: string;
  schema: z.ZodType;
}

/** The schemas to publish, from `eventSchema` (the exported event union unless a test says). */
export function schemaDocuments(eventSchema: z.ZodType = ResultEventSchema): SchemaDocument[] {
  return [
    {
      file: SCHEMA_FILES.resultEvent,
      title: 'ResultEvent',
      description:
        'The result of one logical query, the same for every output channel (the webhook body ' +
        'adds `changed`; the outbound queue replaces `patient_id` by `patient_id_sealed`).',
      schema: eventSchema,
    },
    {
      file: SCHEMA_FILES.webhookPayload,
      title: 'WebhookPayload',
      description:
        'The JSON body of a concordance-worker webhook request: the result event with `changed`. ' +
        'Verify the signature over the raw body before parsing it (docs/webhook-verification.md).',
      schema: asSent(eventSchema),
    },
    {
      file: SCHEMA_FILES.webhookHeaders,
      title: 'WebhookHeaders',
      description:
        'The headers of a concordance-worker webhook request, by lower-case name (HTTP header ' +
        'names are case-insensitive); other headers may come along (docs/webhook-verification.md).',
      schema: WebhookHeadersSchema,
    },
  ];
}

/** Each schema file's text, formatted as the repository's prettier formats JSON. */
export async function renderSchemas(eventSchema?: z.ZodType): Promise<Map<string, string>> {
  const options = await resolveConfig(join(SCHEMA_DIR, SCHEMA_FILES.resultEvent));
  const rendered = new Map<string, string>();
  for (const { file, title, description, schema } of schemaDocuments(eventSchema)) {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12' });
    const document = {
      $schema: json.$schema,
      $id: `urn:concordance-worker:schema:${file.replace(/\.schema\.json$/, '')}`,
      title,
      description,
      $comment: 'Generated from the zod schemas by `npm run schemas` (tools/json-schemas.ts).',
      ...json,
    };
    const text = await format(JSON.stringify(document), { ...options, parser: 'json' });
    rendered.set(file, text);
  }
  return rendered;
}

/** The checked-in schema files that differ from the generated ones, or are extra or missing. */
export async function staleSchemas(dir = SCHEMA_DIR): Promise<string[]> {
  const rendered = await renderSchemas();
  const present = readdirSync(dir).filter((file) => file.endsWith('.json'));
  const stale = [...rendered].filter(
    ([file, text]) => !present.includes(file) || readFileSync(join(dir, file), 'utf8') !== text,
  );
  const extra = present.filter((file) => !rendered.has(file));
  return [...stale.map(([file]) => file), ...extra].sort();
}

/** A validator for a checked-in schema (ajv 8, draft 2020-12, with the formats). */
export interface SchemaValidator {
  (data: unknown): boolean;
  /** ajv's errors of the last call, as text (empty when it passed). */
  errorsText(): string;
}

/** The checked-in schemas compiled with ajv (strict), by file name. */
export function loadSchemaValidators(dir = SCHEMA_DIR): Record<string, SchemaValidator> {
  const ajv = new Ajv2020.default({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats.default(ajv);
  const validators: Record<string, SchemaValidator> = {};
  for (const file of Object.values(SCHEMA_FILES)) {
    const validate = ajv.compile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as object);
    validators[file] = Object.assign((data: unknown) => validate(data), {
      errorsText: () => ajv.errorsText(validate.errors, { dataVar: file }),
    });
  }
  return validators;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--check')) {
    const stale = await staleSchemas();
    for (const file of stale) console.error(`docs/schemas/${file} is out of date`);
    if (stale.length > 0) console.error('run `npm run schemas` and commit docs/schemas/');
    process.exitCode = stale.length > 0 ? 1 : 0;
  } else {
    for (const [file, text] of await renderSchemas()) {
      writeFileSync(join(SCHEMA_DIR, file), text);
      console.log(`wrote docs/schemas/${file}`);
    }
  }
}
