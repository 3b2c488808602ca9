import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';

const fixture = (path: string) =>
  JSON.parse(
    readFileSync(new URL(`../../fixtures/cds-hooks/${path}`, import.meta.url), 'utf8'),
  ) as unknown;
const schema = fixture('cds-hooks-2.0.schema.json') as { $id: string };
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
ajv.addSchema(schema);
const errorsOf = (def: string, data: unknown) => {
  const validate = ajv.getSchema(`${schema.$id}#/$defs/${def}`);
  if (validate === undefined) throw new Error(`no ${def}`);
  return validate(data) ? [] : (validate.errors ?? []);
};

/** The specification's own examples (test/fixtures/cds-hooks/SOURCE.md) and their shapes. */
const EXAMPLES: [file: string, def: string][] = [
  ['discovery-response.json', 'discoveryResponse'],
  ['patient-view-request.json', 'patientViewRequest'],
  ['card-response.json', 'serviceResponse'],
  ['card-response-empty.json', 'serviceResponse'],
  ['feedback-accepted.json', 'feedbackRequest'],
  ['feedback-overridden.json', 'feedbackRequest'],
  ['feedback-overridden-reason.json', 'feedbackRequest'],
];

describe('our CDS Hooks 2.0 JSON Schema, proven on the specification’s examples', () => {
  it.each(EXAMPLES)('%s is a valid %s', (file, def) => {
    expect(errorsOf(def, fixture(`examples/${file}`))).toEqual([]);
  });

  it('refuses the autolaunchable example for its missing indicator alone (REQUIRED in the Card table)', () => {
    const errors = errorsOf(
      'serviceResponse',
      fixture('examples/card-response-autolaunchable.json'),
    );
    expect(errors.map((e) => [e.instancePath, e.params])).toEqual([
      ['/cards/0', { missingProperty: 'indicator' }],
    ]);
  });

  it('refuses what the tables forbid: a long summary, an unknown indicator, a card without source', () => {
    const card = { summary: 'ok', indicator: 'info', source: { label: 'x' } };
    expect(errorsOf('serviceResponse', { cards: [card] })).toEqual([]);
    expect(
      errorsOf('serviceResponse', { cards: [{ ...card, summary: 'x'.repeat(140) }] }),
    ).not.toEqual([]);
    expect(errorsOf('serviceResponse', { cards: [{ ...card, indicator: 'hint' }] })).not.toEqual(
      [],
    );
    expect(
      errorsOf('serviceResponse', { cards: [{ summary: 'ok', indicator: 'info' }] }),
    ).not.toEqual([]);
    expect(
      errorsOf('discoveryResponse', { services: [{ hook: 'patient-view', id: 'x' }] }),
    ).not.toEqual([]);
    expect(
      errorsOf('feedbackRequest', {
        feedback: [{ card: 'c', outcome: 'accepted', outcomeTimestamp: '2020-12-11T00:00:00Z' }],
      }),
    ).not.toEqual([]);
  });
});
