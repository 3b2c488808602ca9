import { createHmac } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ResultEventSchema, type ResultEvent } from '../src/interface/result-event.ts';
import {
  asSent,
  loadSchemaValidators,
  renderSchemas,
  SCHEMA_DIR,
  SCHEMA_FILES,
  staleSchemas,
} from './json-schemas.ts';

const event: ResultEvent = {
  id: '9d3c1f5e-2b4a-4c6d-8e7f-0a1b2c3d4e5f',
  type: 'concordance.failed',
  created_at: '2026-11-02T08:00:00.000Z',
  patient_id: 'MRN-0042',
  patient_service_id: 'psid-1',
  ccsr_category: 'XXX000',
  record_version: 3,
  triggered_by: { event_ids: ['e1'], count: 1, first_update_at: null, last_update_at: null },
  remote_job_id: null,
  status: 'rejected',
  concordance: null,
  error: {
    code: 'ERR_SERVICE_VALIDATION',
    message: 'invalid body',
    items: [{ loc: ['body', 'ccsr_category'], msg: 'unknown', type: 'value_error' }],
  },
};

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of docs/schemas/ to spoil. */
function copyOfSchemas(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cw-schemas-'));
  dirs.push(dir);
  cpSync(SCHEMA_DIR, dir, { recursive: true });
  return dir;
}

describe('the published JSON Schemas', () => {
  it('are checked in as the code generates them (else: npm run schemas)', async () => {
    expect(await staleSchemas()).toEqual([]);
  });

  it('the drift check names a file that differs, one that is missing and one that is extra', async () => {
    const dir = copyOfSchemas();
    writeFileSync(join(dir, SCHEMA_FILES.webhookPayload), '{}\n');
    unlinkSync(join(dir, SCHEMA_FILES.webhookHeaders));
    writeFileSync(join(dir, 'old-event.schema.json'), '{}\n');
    expect(await staleSchemas(dir)).toEqual(
      [SCHEMA_FILES.webhookPayload, SCHEMA_FILES.webhookHeaders, 'old-event.schema.json'].sort(),
    );
  });

  it('compile under ajv 8 (draft 2020-12, strict), and the payload schema holds what is sent', () => {
    const validators = loadSchemaValidators();
    const payload = validators[SCHEMA_FILES.webhookPayload];
    const result = validators[SCHEMA_FILES.resultEvent];
    if (payload === undefined || result === undefined) throw new Error('a schema is missing');
    const sent = { ...event, changed: false };
    expect(payload(sent), payload.errorsText()).toBe(true);
    expect(result(event), result.errorsText()).toBe(true);
    expect(result(sent), result.errorsText()).toBe(true);
    // The router always sets `changed`: a body without it is not what the webhook sends.
    expect(payload(event)).toBe(false);
    expect(payload.errorsText()).toContain("must have required property 'changed'");
    for (const wrong of [
      { ...sent, status: 'done' },
      { ...sent, created_at: '2026-11-02 08:00' },
      { ...sent, id: 'query-1' },
      { ...sent, record_version: 1.5 },
      { ...sent, unexpected: true },
      { ...sent, error: { code: 'ERR_X' } },
    ]) {
      expect(payload(wrong), JSON.stringify(wrong)).toBe(false);
    }
  });

  it('publish a new event type of the exported union without a change to the generator', async () => {
    // What the union may become once another result event type joins it.
    const prevent = z.object({
      id: z.uuid(),
      type: z.literal('prevent.completed'),
      created_at: z.iso.datetime(),
      patient_id: z.string().nullable(),
      prevent: z.record(z.string(), z.unknown()),
      changed: z.boolean().optional(),
    });
    const unions = [
      z.discriminatedUnion('type', [ResultEventSchema, prevent]),
      z.union([ResultEventSchema, prevent]),
    ];
    for (const union of unions) {
      const dir = mkdtempSync(join(tmpdir(), 'cw-schemas-union-'));
      dirs.push(dir);
      for (const [file, text] of await renderSchemas(union)) writeFileSync(join(dir, file), text);
      const validators = loadSchemaValidators(dir);
      const payload = validators[SCHEMA_FILES.webhookPayload];
      const result = validators[SCHEMA_FILES.resultEvent];
      if (payload === undefined || result === undefined) throw new Error('a schema is missing');
      const preventEvent = {
        id: '0b9e5c43-3f0e-4d55-9a8e-3f1c2b7d6a10',
        type: 'prevent.completed',
        created_at: '2026-11-02T08:00:00.000Z',
        patient_id: 'MRN-0042',
        prevent: { risk: 0.12 },
      };
      expect(result(preventEvent), result.errorsText()).toBe(true);
      expect(payload({ ...preventEvent, changed: true }), payload.errorsText()).toBe(true);
      expect(payload(preventEvent)).toBe(false);
      expect(payload({ ...event, changed: true }), payload.errorsText()).toBe(true);
      expect(payload({ ...preventEvent, type: 'prevent.started', changed: true })).toBe(false);
    }
  });

  it('refuse an event schema that is no object or union of objects', () => {
    expect(() => asSent(z.string())).toThrow(/object or a union of objects/);
    expect(() => asSent(z.union([ResultEventSchema, z.null()]))).toThrow(/null schema/);
  });
});

describe('docs/webhook-verification.md', () => {
  const doc = readFileSync(new URL('../docs/webhook-verification.md', import.meta.url), 'utf8');
  /** The text of the first fenced block of `language` after `heading`. */
  const block = (heading: string, language: string): string => {
    const from = doc.indexOf(heading);
    const match = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\\n\`\`\``).exec(doc.slice(from));
    if (from < 0 || match?.[1] === undefined)
      throw new Error(`no ${language} block after ${heading}`);
    return match[1];
  };

  it('shows an example body and headers that the schemas take', () => {
    const validators = loadSchemaValidators();
    const payload = validators[SCHEMA_FILES.webhookPayload];
    const headers = validators[SCHEMA_FILES.webhookHeaders];
    if (payload === undefined || headers === undefined) throw new Error('a schema is missing');
    const body: unknown = JSON.parse(block('## The request', 'json'));
    expect(payload(body), payload.errorsText()).toBe(true);
    const head = Object.fromEntries(
      block('a headers file as a receiver might log it', 'text')
        .split('\n')
        .filter((line) => line.includes(': '))
        .map((line) => line.split(': ') as [string, string]),
    );
    expect(headers(head), headers.errorsText()).toBe(true);
  });

  it('gives a test vector that the scheme, as the page spells it out, and the reference sign alike', () => {
    const vector = Object.fromEntries(
      block('### Test vector', 'text')
        .split('\n')
        .map((line) => /^(\S+)\s+(.*)$/.exec(line)?.slice(1) as [string, string]),
    );
    const field = (name: string) => vector[name] ?? '';
    const [secret, id, body, signature] = ['secret', 'webhook-id', 'body', 'webhook-signature'].map(
      field,
    ) as [string, string, string, string];
    const timestamp = Number(field('webhook-timestamp'));
    expect(Buffer.byteLength(body)).toBe(15);
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    const hmac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body, 'utf8');
    expect(`v1,${hmac.digest('base64')}`).toBe(signature);
    expect(new Webhook(secret).sign(id, new Date(timestamp * 1_000), body)).toBe(signature);
    expect(doc).toContain(`\`${id}.${timestamp}.${body}\``);
  });
});
