import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../../../src/app/compose-app.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import {
  AUTH,
  JSON_AUTH,
  dumpRedis,
  metricValue,
  startHarness,
  type Harness,
} from './support/ingest-harness.ts';
import { samplePatient } from '../../support/sample-patient.ts';

const URL = '/v1/record-updates/batch';
const NDJSON_AUTH = { ...AUTH, 'content-type': 'application/x-ndjson' };

let h: Harness;

afterEach(() => h.close());

function postBatch(items: unknown[] | string, headers: Record<string, string> = JSON_AUTH) {
  return h.app.inject({
    method: 'POST',
    url: URL,
    headers,
    payload: typeof items === 'string' ? items : JSON.stringify(items),
  });
}

const ndjson = (items: unknown[]) => items.map((item) => JSON.stringify(item)).join('\n');

/** A changed copy of the sample record (age `age`), so that each update stores a new version. */
const recordAged = (age: number) => ({
  ...samplePatient,
  demographics: { ...samplePatient.demographics, age },
});

const counterValue = (name: string, labels: Record<string, string>) =>
  metricValue(h.registry, name, labels);

describe('POST /v1/record-updates/batch, accepted', () => {
  beforeEach(async () => {
    h = await startHarness({
      rules: [{ ccsr_category: 'CIR007' }],
      batch: { max_items: 50, max_bytes: 1_000_000 },
    });
  });

  it('stores every item of a JSON array and answers each as the single route would (202)', async () => {
    await h.app.inject({ method: 'PUT', url: '/v1/patients/MRN-B1/presets/END002', headers: AUTH });
    const res = await postBatch([
      {
        patient_id: 'MRN-B1',
        event_id: 'evt-b1',
        source: 'replay',
        assembled_patient: samplePatient,
      },
      {
        patient_id: 'MRN-B2',
        event_id: 'evt-b2',
        source: 'replay',
        assembled_patient: samplePatient,
      },
      // The same patient again, later in the batch: applied after the first, joins its query.
      { patient_id: 'MRN-B1', source: 'replay', assembled_patient: recordAged(58) },
    ]);
    expect(res.statusCode).toBe(202);
    const answer = res.json();
    const b1 = await h.crosswalk.find('MRN-B1');
    const b2 = await h.crosswalk.find('MRN-B2');
    expect(answer).toEqual({
      accepted: 3,
      duplicates: 0,
      results: [
        {
          event_id: 'evt-b1',
          patient_service_id: b1,
          queries: [
            { ccsr_category: 'END002', job_id: expect.any(String), coalesced: false },
            { ccsr_category: 'CIR007', job_id: expect.any(String), coalesced: false },
          ],
        },
        {
          event_id: 'evt-b2',
          patient_service_id: b2,
          queries: [{ ccsr_category: 'CIR007', job_id: expect.any(String), coalesced: false }],
        },
        {
          event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          patient_service_id: b1,
          queries: [
            {
              ccsr_category: 'END002',
              job_id: answer.results[0].queries[0].job_id,
              coalesced: true,
            },
            {
              ccsr_category: 'CIR007',
              job_id: answer.results[0].queries[1].job_id,
              coalesced: true,
            },
          ],
        },
      ],
    });
    // The later item of MRN-B1 is its current record.
    expect(await h.records.version(b1 as string)).toBe(2);
    expect((await h.records.get(b1 as string))?.record?.demographics.age).toBe(58);
    expect((await h.records.get(b2 as string))?.record).toEqual(samplePatient);
    expect((await h.due()).map((d) => d.jobId).sort()).toEqual(
      [...answer.results[0].queries, ...answer.results[1].queries]
        .map((q: { job_id: string }) => q.job_id)
        .sort(),
    );
    expect(
      await counterValue('cw_ingest_events_total', { source: 'replay', outcome: 'accepted' }),
    ).toBe(3);
    expect(await counterValue('cw_queries_enqueued_total', { kind: 'new' })).toBe(3);
    expect(await counterValue('cw_queries_enqueued_total', { kind: 'coalesced' })).toBe(2);
  });

  it('takes NDJSON (blank lines and CRLF line ends included) the same way', async () => {
    const body =
      `${JSON.stringify({ patient_id: 'MRN-N1', event_id: 'evt-n1', assembled_patient: samplePatient })}\r\n` +
      '\n' +
      `${JSON.stringify({ patient_id: 'MRN-N2', event_id: 'evt-n2', assembled_patient: samplePatient })}\n`;
    const res = await postBatch(body, NDJSON_AUTH);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({
      accepted: 2,
      duplicates: 0,
      results: [{ event_id: 'evt-n1' }, { event_id: 'evt-n2' }],
    });
    for (const id of ['MRN-N1', 'MRN-N2']) {
      const psid = await h.crosswalk.find(id);
      expect((await h.records.get(psid as string))?.record).toEqual(samplePatient);
    }
    expect(await h.due()).toHaveLength(2);
  });

  it('answers items whose event id was seen as duplicates and changes nothing for them', async () => {
    const first = [
      {
        patient_id: 'MRN-D1',
        event_id: 'evt-d1',
        source: 'replay',
        assembled_patient: samplePatient,
      },
      {
        patient_id: 'MRN-D2',
        event_id: 'evt-d2',
        source: 'replay',
        assembled_patient: samplePatient,
      },
    ];
    expect((await postBatch(first)).statusCode).toBe(202);
    const d1 = (await h.crosswalk.find('MRN-D1')) as string;
    const stateBefore = await h.inspect.hgetall(`${h.prefix}:qs:${d1}:CIR007`);

    // A replay of the same batch with one new item (and a changed record under an old event id).
    const replay = await postBatch([
      { ...first[0], assembled_patient: recordAged(70) },
      first[1],
      {
        patient_id: 'MRN-D3',
        event_id: 'evt-d3',
        source: 'replay',
        assembled_patient: samplePatient,
      },
    ]);
    expect(replay.statusCode).toBe(202);
    expect(replay.json()).toMatchObject({
      accepted: 1,
      duplicates: 2,
      results: [
        { duplicate: true, event_id: 'evt-d1' },
        { duplicate: true, event_id: 'evt-d2' },
        { event_id: 'evt-d3', queries: [{ ccsr_category: 'CIR007', coalesced: false }] },
      ],
    });
    expect(await h.records.version(d1)).toBe(1);
    expect((await h.records.get(d1))?.record).toEqual(samplePatient);
    expect(await h.inspect.hgetall(`${h.prefix}:qs:${d1}:CIR007`)).toEqual(stateBefore);
    expect(
      await counterValue('cw_ingest_events_total', { source: 'replay', outcome: 'duplicate' }),
    ).toBe(2);
    expect(
      await counterValue('cw_ingest_events_total', { source: 'replay', outcome: 'accepted' }),
    ).toBe(3);
  });

  it('creates an unknown patient from an earlier item, and a later item without a record uses it', async () => {
    const res = await postBatch([
      { patient_id: 'MRN-LATER', assembled_patient: samplePatient },
      { patient_id: 'MRN-LATER', event_id: 'evt-no-record', ccsr_categories: ['END005'] },
    ]);
    expect(res.statusCode).toBe(202);
    const psid = await h.crosswalk.find('MRN-LATER');
    expect(
      res.json().results.map((r: { patient_service_id: string }) => r.patient_service_id),
    ).toEqual([psid, psid]);
    expect(await h.records.version(psid as string)).toBe(1);
    expect((await h.due()).map((d) => d.ccsrCategory).sort()).toEqual(['CIR007', 'END005']);
  });

  it('commits batches larger than one script call, in order', async () => {
    // 50 items of 5 patients: 100 is one script call's most, so make several calls with a limit.
    const items = Array.from({ length: 50 }, (_, i) => ({
      patient_id: `MRN-M${i % 5}`,
      event_id: `evt-m${i}`,
      assembled_patient: recordAged(20 + i),
    }));
    const res = await postBatch(items);
    expect(res.statusCode).toBe(202);
    expect(res.json().accepted).toBe(50);
    for (let p = 0; p < 5; p++) {
      const psid = (await h.crosswalk.find(`MRN-M${p}`)) as string;
      expect(await h.records.version(psid)).toBe(10);
      // The last item of the patient is its record: the items were applied in order.
      expect((await h.records.get(psid))?.record?.demographics.age).toBe(20 + 45 + p);
    }
  });
});

describe('POST /v1/record-updates/batch, refused whole', () => {
  let before: Map<string, string>;

  beforeEach(async () => {
    h = await startHarness({
      rules: [{ ccsr_category: 'CIR007' }],
      batch: { max_items: 3, max_bytes: 8_192 },
    });
    expect(
      (await postBatch([{ patient_id: 'MRN-K', assembled_patient: samplePatient }])).statusCode,
    ).toBe(202);
    before = await dumpRedis(h.inspect, h.prefix);
  });

  /** Redis holds exactly what it held before the refused batch. */
  async function expectNothingChanged() {
    expect(await dumpRedis(h.inspect, h.prefix)).toEqual(before);
  }

  it('answers 422 naming every bad item by its index, and stores none of the good ones', async () => {
    const res = await postBatch([
      { patient_id: 'MRN-OK', assembled_patient: samplePatient },
      { patient_id: 'MRN-K', occurred_at: 'yesterday' },
      { patient_id: 'MRN-K', ccsr_categories: ['XXX000'], priority: 'high' },
    ]);
    expect(res.statusCode).toBe(422);
    const { detail } = res.json() as { detail: { loc: unknown[]; msg: string; type: string }[] };
    expect(detail).toEqual(
      expect.arrayContaining([
        { loc: ['body', 1, 'occurred_at'], msg: expect.any(String), type: expect.any(String) },
        {
          loc: ['body', 2, 'ccsr_categories', 0],
          msg: expect.any(String),
          type: expect.any(String),
        },
        { loc: ['body', 2], msg: expect.any(String), type: expect.any(String) },
      ]),
    );
    expect(detail.every((item) => item.loc[1] === 1 || item.loc[1] === 2)).toBe(true);
    expect(await h.crosswalk.find('MRN-OK')).toBeUndefined();
    await expectNothingChanged();
    expect(
      await counterValue('cw_ingest_events_total', { source: 'none', outcome: 'rejected' }),
    ).toBe(3);
  });

  it('answers 422 record_missing for an unknown patient without a record, storing nothing', async () => {
    const res = await postBatch([
      { patient_id: 'MRN-FINE', assembled_patient: samplePatient },
      { patient_id: 'MRN-NEW', event_id: 'evt-missing', ccsr_categories: ['END002'] },
      { patient_id: 'MRN-K', changes: ['Observation'] },
    ]);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      detail: [
        {
          loc: ['body', 1, 'assembled_patient'],
          msg: 'no record is known for this patient: send assembled_patient',
          type: 'record_missing',
        },
      ],
    });
    expect(await h.crosswalk.find('MRN-FINE')).toBeUndefined();
    await expectNothingChanged();
  });

  it('answers 422 json_invalid for each malformed NDJSON line, storing nothing', async () => {
    const body = [
      JSON.stringify({ patient_id: 'MRN-K', assembled_patient: recordAged(60) }),
      '{"patient_id": "MRN-K", ',
      '',
      '{"patient_id": "MRN-K", "__proto__": {"polluted": true}}',
    ].join('\n');
    const res = await postBatch(body, NDJSON_AUTH);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      detail: [
        { loc: ['body', 1], msg: 'malformed JSON on line 2', type: 'json_invalid' },
        { loc: ['body', 2], msg: 'malformed JSON on line 4', type: 'json_invalid' },
      ],
    });
    await expectNothingChanged();
  });

  it('answers 413 above the item limit (JSON and NDJSON) and above the byte limit', async () => {
    const items = Array.from({ length: 4 }, (_, i) => ({ patient_id: `MRN-X${i}` }));
    const json = await postBatch(items);
    expect(json.statusCode).toBe(413);
    expect(json.json()).toEqual({ detail: 'a batch holds at most 3 updates: split it' });
    const lines = await postBatch(ndjson(items), NDJSON_AUTH);
    expect(lines.statusCode).toBe(413);
    expect(lines.json()).toEqual({ detail: 'a batch holds at most 3 updates: split it' });
    const big = await postBatch([{ patient_id: 'MRN-K', changes: ['a'.repeat(9_000)] }]);
    expect(big.statusCode).toBe(413);
    expect(big.json()).toEqual({ detail: 'request body is larger than 8192 bytes' });
    await expectNothingChanged();
  });

  it('answers 422 for an empty batch, 400 for malformed JSON, 415 for another type', async () => {
    const empty = await postBatch([]);
    expect(empty.statusCode).toBe(422);
    expect(empty.json().detail).toEqual([
      { loc: ['body'], msg: 'a batch holds at least one update', type: 'too_small' },
    ]);
    expect((await postBatch('', NDJSON_AUTH)).statusCode).toBe(422);
    const notAnArray = await postBatch(JSON.stringify({ patient_id: 'MRN-K' }));
    expect(notAnArray.statusCode).toBe(422);
    expect(notAnArray.json().detail[0].loc).toEqual(['body']);
    expect((await postBatch('[{"patient_id": "MRN-K",')).statusCode).toBe(400);
    const text = await postBatch('[]', { ...AUTH, 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    const none = await h.app.inject({ method: 'POST', url: URL, headers: AUTH });
    expect(none.statusCode).toBe(415);
    await expectNothingChanged();
  });

  it('answers 401 without a token, before reading the body', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: URL,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify([{ patient_id: 'MRN-K', assembled_patient: recordAged(61) }]),
    });
    expect(res.statusCode).toBe(401);
    await expectNothingChanged();
  });
});

describe('the crosswalk cache stays correct when another process changes the crosswalk', () => {
  beforeEach(async () => {
    h = await startHarness({ rules: [{ ccsr_category: 'CIR007' }] });
  });

  const single = (body: unknown) =>
    h.app.inject({
      method: 'POST',
      url: '/v1/record-updates',
      headers: JSON_AUTH,
      payload: body as object,
    });

  /** Sends one update through `route`; answers its status and the service id it went to. */
  async function sendVia(route: 'single' | 'batch', update: object) {
    const res = route === 'single' ? await single(update) : await postBatch([update]);
    const answer = res.json();
    const psid = (route === 'single' ? answer : answer.results?.[0])?.patient_service_id;
    return { status: res.statusCode, psid: psid as string };
  }

  it.each(['single', 'batch'] as const)(
    'sends a purged patient to a new service id, never to the purged one (%s route)',
    async (route) => {
      const first = await single({ patient_id: 'MRN-P', assembled_patient: samplePatient });
      const purged = first.json().patient_service_id as string;
      // The app now holds MRN-P in its cache; another process purges the patient.
      await h.admin.purge('MRN-P', { actor: 'test' });
      expect(await h.records.version(purged)).toBe(0);

      const { status, psid } = await sendVia(route, {
        patient_id: 'MRN-P',
        assembled_patient: recordAged(66),
      });
      expect(status).toBe(202);
      expect(psid).not.toBe(purged);
      expect(await h.crosswalk.find('MRN-P')).toBe(psid);
      // Nothing of the purged patient came back.
      expect(await h.records.get(purged)).toBeUndefined();
      expect((await h.records.get(psid))?.record?.demographics.age).toBe(66);
      expect(await counterValue('cw_crosswalk_cache_lookups_total', { outcome: 'stale' })).toBe(1);
    },
  );

  it.each(['single', 'batch'] as const)(
    'sends updates of a local id merged into another to the survivor (%s route)',
    async (route) => {
      const prior = (
        await single({ patient_id: 'MRN-OLD', assembled_patient: samplePatient })
      ).json().patient_service_id as string;
      const survivor = (
        await single({ patient_id: 'MRN-NEW', assembled_patient: samplePatient })
      ).json().patient_service_id as string;
      // An HL7 merge (A40) by another ingest process: its own connection, ClinicalUpdates, cache.
      const other = App.compose(h.config, createLogger({ name: 'other-ingest', level: 'silent' }), {
        redis: h.inspect,
        registry: new Registry(),
      }).ingestParts().updates;
      await other.merge({ survivingLocalId: 'MRN-NEW', priorLocalId: 'MRN-OLD', eventId: 'a40' });

      const { status, psid } = await sendVia(route, {
        patient_id: 'MRN-OLD',
        assembled_patient: recordAged(71),
      });
      expect(status).toBe(202);
      expect(psid).toBe(survivor);
      expect((await h.records.get(survivor))?.record?.demographics.age).toBe(71);
      // The retired patient got no record back.
      expect((await h.records.get(prior))?.record).toBeUndefined();
      expect(await counterValue('cw_crosswalk_cache_lookups_total', { outcome: 'stale' })).toBe(1);
    },
  );

  it('looks a known patient up once, then takes it from the cache', async () => {
    for (let i = 0; i < 3; i++) {
      expect(
        (await single({ patient_id: 'MRN-C', assembled_patient: recordAged(40 + i) })).statusCode,
      ).toBe(202);
    }
    expect(
      await postBatch([{ patient_id: 'MRN-C', assembled_patient: recordAged(50) }]),
    ).toMatchObject({ statusCode: 202 });
    // The first update found no entry (miss) and created the patient; the others hit.
    expect(await counterValue('cw_crosswalk_cache_lookups_total', { outcome: 'miss' })).toBe(1);
    expect(await counterValue('cw_crosswalk_cache_lookups_total', { outcome: 'hit' })).toBe(3);
  });
});
