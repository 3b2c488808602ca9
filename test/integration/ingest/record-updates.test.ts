import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AUTH,
  JSON_AUTH,
  metricValue,
  startHarness,
  type Harness,
} from './support/ingest-harness.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import {
  MAX_METADATA_DEPTH,
  MAX_RECORD_DEPTH,
} from '../../../src/ingest/schemas/record-update-body.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let h: Harness;

afterEach(() => h.close());

function post(body: unknown, headers: Record<string, string> = JSON_AUTH) {
  return h.app.inject({
    method: 'POST',
    url: '/v1/record-updates',
    headers,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Queries ingest opened and left for the workers (the due set). */
async function dueCount(): Promise<number> {
  return (await h.due()).length;
}

const counterValue = (name: string, labels: Record<string, string>) =>
  metricValue(h.registry, name, labels);

describe('POST /v1/record-updates, accepted', () => {
  beforeEach(async () => {
    h = await startHarness({
      rules: [
        { ccsr_category: 'CIR007' },
        { ccsr_category: 'RSP009', when_changes: ['Observation'] },
      ],
    });
  });

  it('stores the record and leaves one due query per category for the workers (202)', async () => {
    const before = Date.now();
    await h.app.inject({ method: 'PUT', url: '/v1/patients/MRN-1/presets/END002', headers: AUTH });
    const res = await post({
      patient_id: 'MRN-1',
      event_id: 'evt-1',
      source: 'mirth',
      occurred_at: '2026-03-01T10:00:00+01:00',
      assembled_patient: samplePatient,
      changes: ['condition'],
      ccsr_categories: ['END005'],
    });
    expect(res.statusCode).toBe(202);
    const answer = res.json();
    const psid = await h.crosswalk.find('MRN-1');
    expect(answer).toEqual({
      event_id: 'evt-1',
      patient_service_id: psid,
      queries: [
        { ccsr_category: 'END002', job_id: expect.any(String), coalesced: false },
        { ccsr_category: 'CIR007', job_id: expect.any(String), coalesced: false },
        { ccsr_category: 'END005', job_id: expect.any(String), coalesced: false },
      ],
    });
    // The record is the patient's current one.
    expect((await h.records.get(psid as string))?.record?.demographics.age).toBe(57);
    // Exactly these queries, each due once the debounce window has passed, named by the service id.
    const due = await h.due();
    expect(due.map((d) => d.jobId).sort()).toEqual(
      answer.queries.map((q: { job_id: string }) => q.job_id).sort(),
    );
    for (const query of answer.queries as { job_id: string; ccsr_category: string }[]) {
      const entry = due.find((d) => d.jobId === query.job_id);
      expect(entry).toMatchObject({ patientServiceId: psid, ccsrCategory: query.ccsr_category });
      expect(entry?.dueAt).toBeGreaterThanOrEqual(before + h.config.queries.debounce_ms);
      expect(entry?.dueAt).toBeLessThanOrEqual(Date.now() + h.config.queries.debounce_ms);
    }
    expect(
      await counterValue('cw_ingest_events_total', { source: 'mirth', outcome: 'accepted' }),
    ).toBe(1);
    expect(await counterValue('cw_queries_enqueued_total', { kind: 'new' })).toBe(3);
  });

  it('joins a second update within the window to the open query (coalesced, same job id)', async () => {
    const first = await post({ patient_id: 'MRN-2', assembled_patient: samplePatient });
    const changed = { ...samplePatient, demographics: { ...samplePatient.demographics, age: 58 } };
    const second = await post({ patient_id: 'MRN-2', assembled_patient: changed });
    expect(first.statusCode).toBe(202);
    expect(second.statusCode).toBe(202);
    const [a] = first.json().queries;
    const [b] = second.json().queries;
    expect(a).toMatchObject({ ccsr_category: 'CIR007', coalesced: false });
    expect(b).toEqual({ ...a, coalesced: true });
    expect(first.json().event_id).toMatch(UUID);
    expect(second.json().event_id).not.toBe(first.json().event_id);
    expect(await dueCount()).toBe(1);
    const psid = first.json().patient_service_id;
    expect(await h.records.version(psid)).toBe(2);
    expect(await counterValue('cw_queries_enqueued_total', { kind: 'coalesced' })).toBe(1);
  });

  it('accepts the same record again without opening a query (no work for nothing), and counts it', async () => {
    const first = await post({ patient_id: 'MRN-SAME', assembled_patient: samplePatient });
    expect(first.json().queries).toHaveLength(1);
    const again = await post({ patient_id: 'MRN-SAME', assembled_patient: samplePatient });
    expect(again.statusCode).toBe(202);
    expect(again.json()).toMatchObject({ queries: [] });
    expect(await dueCount()).toBe(1);
    expect(await h.records.version(first.json().patient_service_id)).toBe(1);
    expect(await counterValue('cw_updates_unchanged_total', {})).toBe(1);
  });

  it('applies rules with when_changes only when the update names those kinds of data', async () => {
    const without = await post({ patient_id: 'MRN-3', assembled_patient: samplePatient });
    expect(without.json().queries.map((q: { ccsr_category: string }) => q.ccsr_category)).toEqual([
      'CIR007',
    ]);
    const other = await post({ patient_id: 'MRN-3', changes: ['Procedure'] });
    expect(other.json().queries.map((q: { ccsr_category: string }) => q.ccsr_category)).toEqual([
      'CIR007',
    ]);
    const matching = await post({ patient_id: 'MRN-3', changes: ['OBSERVATION'] });
    expect(matching.statusCode).toBe(202);
    expect(matching.json().queries.map((q: { ccsr_category: string }) => q.ccsr_category)).toEqual([
      'CIR007',
      'RSP009',
    ]);
  });

  it('runs a category named twice (preset, rule and body) once', async () => {
    await h.app.inject({ method: 'PUT', url: '/v1/patients/MRN-4/presets/CIR007', headers: AUTH });
    const res = await post({
      patient_id: 'MRN-4',
      assembled_patient: samplePatient,
      ccsr_categories: ['CIR007', 'CIR007'],
    });
    expect(res.json().queries).toHaveLength(1);
    expect(await dueCount()).toBe(1);
  });

  it('uses the stored record when the update carries none', async () => {
    await post({ patient_id: 'MRN-5', assembled_patient: samplePatient });
    const psid = (await h.crosswalk.find('MRN-5')) as string;
    const res = await post({ patient_id: 'MRN-5', changes: ['Observation'] });
    expect(res.statusCode).toBe(202);
    expect(await h.records.version(psid)).toBe(1);
  });

  it('answers a repeated event id 200 duplicate and changes nothing', async () => {
    const body = {
      patient_id: 'MRN-6',
      event_id: 'evt-dup',
      source: 'mirth',
      assembled_patient: samplePatient,
    };
    expect((await post(body)).statusCode).toBe(202);
    const psid = (await h.crosswalk.find('MRN-6')) as string;
    const jobsBefore = await dueCount();
    const stateBefore = await h.inspect.hgetall(`${h.prefix}:qs:${psid}:CIR007`);

    const again = await post({ ...body, ccsr_categories: ['END002'] });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ duplicate: true, event_id: 'evt-dup' });
    expect(await dueCount()).toBe(jobsBefore);
    expect(await h.records.version(psid)).toBe(1);
    expect(await h.inspect.hgetall(`${h.prefix}:qs:${psid}:CIR007`)).toEqual(stateBefore);
    expect(
      await counterValue('cw_ingest_events_total', { source: 'mirth', outcome: 'duplicate' }),
    ).toBe(1);
  });
});

describe('POST /v1/record-updates, refused', () => {
  beforeEach(async () => {
    h = await startHarness({ rules: [{ ccsr_category: 'CIR007' }], bodyLimitBytes: 4_096 });
    // A patient with a stored record: refused updates must leave it as it is.
    expect((await post({ patient_id: 'MRN-K', assembled_patient: samplePatient })).statusCode).toBe(
      202,
    );
    await h.inspect.del(`${h.prefix}:qdue`);
  });

  async function expectNothingChanged() {
    const psid = (await h.crosswalk.find('MRN-K')) as string;
    expect(await h.records.version(psid)).toBe(1);
    expect(await dueCount()).toBe(0);
  }

  it.each([
    ['a missing patient_id', { assembled_patient: samplePatient }, ['body', 'patient_id']],
    ['an empty patient_id', { patient_id: '' }, ['body', 'patient_id']],
    ['a patient_id of 129 characters', { patient_id: 'x'.repeat(129) }, ['body', 'patient_id']],
    ['an unknown field', { patient_id: 'MRN-K', priority: 'high' }, ['body']],
    [
      'a bad occurred_at',
      { patient_id: 'MRN-K', occurred_at: 'yesterday' },
      ['body', 'occurred_at'],
    ],
    ['an over-long source', { patient_id: 'MRN-K', source: 's'.repeat(101) }, ['body', 'source']],
    ['changes that are not strings', { patient_id: 'MRN-K', changes: [1] }, ['body', 'changes', 0]],
    [
      'an invalid record',
      { patient_id: 'MRN-K', assembled_patient: { ...samplePatient, demographics: { age: 130 } } },
      ['body', 'assembled_patient', 'demographics', 'age'],
    ],
    [
      'an identifying field in node metadata',
      {
        patient_id: 'MRN-K',
        assembled_patient: {
          ...samplePatient,
          nodes: [{ ...samplePatient.nodes[0], metadata: { source: { MRN: '123' } } }],
          relationships: [],
        },
      },
      ['body', 'assembled_patient', 'nodes', 0, 'metadata', 'source', 'MRN'],
    ],
    [
      'an unknown ccsr category',
      { patient_id: 'MRN-K', ccsr_categories: ['END002', 'ABC999'] },
      ['body', 'ccsr_categories', 1],
    ],
    [
      'a placeholder ccsr category',
      { patient_id: 'MRN-K', ccsr_categories: ['XXX000'] },
      ['body', 'ccsr_categories', 0],
    ],
  ])('answers 422 for %s and changes nothing', async (_name, body, loc) => {
    const res = await post(body);
    expect(res.statusCode).toBe(422);
    const { detail } = res.json();
    expect(detail).toEqual(
      expect.arrayContaining([{ loc, msg: expect.any(String), type: expect.any(String) }]),
    );
    await expectNothingChanged();
  });

  it('names placeholder codes as such', async () => {
    const res = await post({ patient_id: 'MRN-K', ccsr_categories: ['NoDX1', 'InvlDX', 'XXX111'] });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toHaveLength(3);
    for (const item of res.json().detail) expect(item.msg).toMatch(/placeholder/);
  });

  it('answers 422 record_missing for a patient with no record, scheduling nothing', async () => {
    const res = await post({
      patient_id: 'MRN-NEW',
      event_id: 'evt-missing',
      ccsr_categories: ['END002'],
    });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      detail: [
        {
          loc: ['body', 'assembled_patient'],
          msg: 'no record is known for this patient: send assembled_patient',
          type: 'record_missing',
        },
      ],
    });
    const psid = await h.crosswalk.find('MRN-NEW');
    expect(await h.records.version(psid ?? 'none')).toBe(0);
    expect(await h.presets.list(psid ?? 'none')).toEqual([]);
    await expectNothingChanged();
    // Not remembered: the same event id with a record goes through.
    const retry = await post({
      patient_id: 'MRN-NEW',
      event_id: 'evt-missing',
      assembled_patient: samplePatient,
    });
    expect(retry.statusCode).toBe(202);
  });

  it('answers 400 for malformed JSON', async () => {
    const res = await post('{"patient_id": "MRN-K",');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: expect.any(String) });
    await expectNothingChanged();
  });

  it('answers 415 for another content type, and for none', async () => {
    const text = await post('patient_id=MRN-K', { ...AUTH, 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toEqual({ detail: expect.any(String) });
    const form = await post('patient_id=MRN-K', {
      ...AUTH,
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.statusCode).toBe(415);
    const none = await h.app.inject({ method: 'POST', url: '/v1/record-updates', headers: AUTH });
    expect(none.statusCode).toBe(415);
    await expectNothingChanged();
  });

  it('answers 413 for a body over the limit', async () => {
    const res = await post({ patient_id: 'MRN-K', source: 'x', changes: ['a'.repeat(5_000)] });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ detail: 'request body is larger than 4096 bytes' });
    await expectNothingChanged();
  });

  it('counts refused updates as rejected', async () => {
    await post({ patient_id: 'MRN-K', source: 'epic', ccsr_categories: ['XXX000'] });
    await post({ patient_id: 'MRN-K', source: 'has spaces', ccsr_categories: ['XXX000'] });
    const text = await h.registry.getSingleMetricAsString('cw_ingest_events_total');
    expect(text).toContain('cw_ingest_events_total{source="epic",outcome="rejected"} 1');
    expect(text).toContain('cw_ingest_events_total{source="other",outcome="rejected"} 1');
  });
});

describe('POST /v1/record-updates, deeply nested records', () => {
  beforeEach(async () => {
    h = await startHarness({ rules: [{ ccsr_category: 'CIR007' }] });
  });

  /** The sample record with `nested` (JSON text) at `where` in its first node. */
  function nestedBody(nested: string, where: 'metadata' | 'extra'): string {
    const node = { ...samplePatient.nodes[0], [where]: '@NESTED@' };
    const record = { ...samplePatient, nodes: [node, ...samplePatient.nodes.slice(1)] };
    const body = JSON.stringify({ patient_id: 'MRN-DEEP', assembled_patient: record });
    return body.replace('"@NESTED@"', nested);
  }
  const levels = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

  it.each([
    ['metadata 5,000 levels deep', levels(5_000), 'metadata', MAX_METADATA_DEPTH],
    [
      'metadata 800,000 levels deep (near the 5 MiB body limit)',
      levels(800_000),
      'metadata',
      MAX_METADATA_DEPTH,
    ],
    ['another node field 100,000 levels deep', levels(100_000), 'extra', MAX_RECORD_DEPTH],
  ] as const)(
    'answers 422 (not 500) for %s and stores nothing',
    async (_name, nested, where, max) => {
      const res = await post(nestedBody(nested, where));
      expect(res.statusCode).toBe(422);
      const [item, ...more] = res.json().detail as { loc: unknown[]; msg: string }[];
      expect(more).toEqual([]);
      expect(item?.msg).toContain(`deeper than ${max} levels`);
      expect(item?.loc.slice(0, 5)).toEqual(['body', 'assembled_patient', 'nodes', 0, where]);
      expect(item?.loc.length).toBeLessThanOrEqual(MAX_RECORD_DEPTH + 2);
      expect(await h.crosswalk.find('MRN-DEEP')).toBeUndefined();
      expect(await dueCount()).toBe(0);
    },
  );

  it(`accepts metadata of exactly ${MAX_METADATA_DEPTH} levels`, async () => {
    const res = await post(nestedBody(levels(MAX_METADATA_DEPTH - 1), 'metadata'));
    expect(res.statusCode).toBe(202);
  });
});
