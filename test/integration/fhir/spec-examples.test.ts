import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { FHIR_JSON, startFhirHarness, type FhirHarness } from './support/fhir-harness.ts';

/** Public FHIR examples kept unchanged under test/fixtures/fhir (see its SOURCES.md). */
function example(name: string): Record<string, unknown> {
  const url = new URL(`../../fixtures/fhir/${name}`, import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as Record<string, unknown>;
}

const PATIENT = example('us-core-patient-example.json');
const ULCER = example('us-core-condition-duodenal-ulcer.json');
const BURN = example('us-core-condition-encounter-diagnosis-example1.json');

let h: FhirHarness;
afterEach(async () => {
  await h.close();
});

const bundle = (type: string, ...resources: Record<string, unknown>[]) => ({
  resourceType: 'Bundle',
  type,
  entry: resources.map((resource) => ({ resource })),
});

async function ignored(reason: string): Promise<number> {
  const text = await h.registry.metrics();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`cw_fhir_ignored_total{reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('FHIR specification (US Core) examples', () => {
  it('Conditions first, then the Patient alone: the record keeps both and gains the birth date', async () => {
    h = await startFhirHarness();
    const first = await h.app.inject({
      method: 'POST',
      url: '/v1/fhir/Bundle',
      headers: FHIR_JSON,
      payload: JSON.stringify(bundle('searchset', ULCER, BURN)),
    });
    expect(first.statusCode).toBe(202);
    const psid = (await h.crosswalk.find('example')) as string;
    const keys = [
      'fhir:Condition/condition-duodenal-ulcer',
      'fhir:Condition/encounter-diagnosis-example1',
    ];
    expect(Object.keys((await h.records.get(psid))?.clinical?.items ?? {}).sort()).toEqual(keys);
    expect((await h.records.get(psid))?.clinical?.patient.birthDate).toBeUndefined();

    const second = await h.app.inject({
      method: 'POST',
      url: '/v1/fhir/Bundle',
      headers: FHIR_JSON,
      payload: JSON.stringify(bundle('collection', PATIENT)),
    });
    expect(second.statusCode).toBe(202);
    const record = await h.records.get(psid);
    expect(Object.keys(record?.clinical?.items ?? {}).sort()).toEqual(keys);
    expect(record?.clinical?.patient.birthDate).toBe('1987-02-20');
  });

  it('a classic rest-hook PUT of the spec Condition applies it', async () => {
    h = await startFhirHarness({
      restHooks: [{ name: 'uscore', criteria: 'Condition', first_lookback_s: 60, overlap_s: 0 }],
    });
    const res = await h.app.inject({
      method: 'PUT',
      url: '/v1/fhir/rest-hook/uscore/Condition/condition-duodenal-ulcer',
      headers: FHIR_JSON,
      payload: JSON.stringify(ULCER),
    });
    expect(res.statusCode).toBe(200);
    const psid = (await h.crosswalk.find('example')) as string;
    expect(
      (await h.records.get(psid))?.clinical?.items['fhir:Condition/condition-duodenal-ulcer'],
    ).toMatchObject({
      kind: 'condition',
      problemList: true,
    });
  });
});

describe('vendor-style notifications (Inferno subscriptions test kit)', () => {
  it('acknowledges an empty notification for a topic we do not use, and counts it', async () => {
    h = await startFhirHarness();
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/fhir/notifications',
      headers: FHIR_JSON,
      payload: JSON.stringify(example('inferno-empty_notification_bundle_example.json')),
    });
    expect(res.statusCode).toBe(200);
    expect(await ignored('notification')).toBe(1);
    expect(await h.inspect.keys(`${h.prefix}:xw*`)).toEqual([]);
  });

  it('acknowledges an id-only notification whose focus is an Encounter, without a read', async () => {
    h = await startFhirHarness();
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/fhir/notifications',
      headers: FHIR_JSON,
      payload: JSON.stringify(example('inferno-id_only_notification_bundle_example.json')),
    });
    expect(res.statusCode).toBe(200);
    expect(h.fhir.seen).toEqual([]);
    expect(await ignored('resource_type')).toBe(1);
    expect(await ignored('notification')).toBe(1);
  });
});
