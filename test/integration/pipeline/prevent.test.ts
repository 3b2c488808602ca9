import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../../src/config/config-schema.ts';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { preventIdentifier } from '../../../src/identity/prevent-identifier.ts';
import { startSimulator } from '../../../src/simulator/start-simulator.ts';
import type { WebhookReceiver } from '../../../tools/webhook-receiver.ts';
import {
  API_KEY,
  PipelineHarness,
  sampleRecord,
  testConfig,
  type RequestLogEntry,
} from '../../support/pipeline-harness.ts';
import { isResultErrorCode } from '../../../src/queries/result-error-codes.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';
import { eventually } from '../../support/eventually.ts';
import { quickWebhook, startIngestWithWebhook } from '../../support/pipeline-webhook.ts';
import {
  FAST_FEED_PIPELINE_LINES,
  startPipelineProcesses,
} from '../../support/pipeline-processes.ts';

const TOKEN = 'prevent-test-ingest-token-0123456789';
const PREVENT_ID_KEY = randomBytes(32).toString('base64');
const LOCAL_ID = 'MRN-PLANTED-PREVENT-6120';
/** Everything identifying planted in the record: none of it may reach the service or a log. */
const PLANTED = [
  LOCAL_ID,
  'Quillfeather',
  'Ottavia',
  '555-201-7733',
  '5552017733',
  '41 Brackenmoor Lane',
  'SSN-PLANTED-88120',
  'fell off a ladder at the Brackenmoor fete',
];

const loinc = (code: string) => ({ coding: [{ system: 'http://loinc.org', code }] });
const ucum = (value: number, code: string) => ({
  value,
  unit: code,
  system: 'http://unitsofmeasure.org',
  code,
});

/**
 * A FHIR Bundle of one patient, as an EHR would send it: a Patient (97 years old, every
 * identifying field planted), a smoking status, BMI and blood pressure, a father's myocardial
 * infarction, and a questionnaire with a LOINC-coded alcohol question and a free-text answer.
 */
function bundle(smoking: string, bmi: number): object {
  const subject = { reference: 'Patient/pt-prevent-1', display: 'Ottavia Quillfeather' };
  const born = `${new Date().getUTCFullYear() - 97}-02-11`;
  const entry = [
    {
      resourceType: 'Patient',
      id: 'pt-prevent-1',
      gender: 'female',
      birthDate: born,
      identifier: [
        { system: 'urn:oid:1.2.3.4', value: LOCAL_ID },
        { system: 'http://hl7.org/fhir/sid/us-ssn', value: 'SSN-PLANTED-88120' },
      ],
      name: [{ family: 'Quillfeather', given: ['Ottavia'], use: 'official' }],
      address: [{ line: ['41 Brackenmoor Lane'], city: 'Springfield', postalCode: '62704' }],
      telecom: [{ system: 'phone', value: '555-201-7733', use: 'home' }],
    },
    {
      resourceType: 'Observation',
      id: 'smoking-1',
      status: 'final',
      category: [{ coding: [{ code: 'social-history' }] }],
      code: loinc('72166-2'),
      subject,
      effectiveDateTime: '2026-01-10',
      valueCodeableConcept: {
        coding: [{ system: 'http://snomed.info/sct', code: smoking }],
        text: 'Ottavia Quillfeather smokes',
      },
    },
    {
      resourceType: 'Observation',
      id: 'bmi-1',
      status: 'final',
      code: loinc('39156-5'),
      subject,
      effectiveDateTime: '2026-01-10',
      valueQuantity: ucum(bmi, 'kg/m2'),
      note: [{ text: 'fell off a ladder at the Brackenmoor fete' }],
    },
    {
      resourceType: 'Observation',
      id: 'bp-1',
      status: 'final',
      code: loinc('85354-9'),
      subject,
      effectiveDateTime: '2026-01-10',
      component: [
        { code: loinc('8480-6'), valueQuantity: ucum(142, 'mm[Hg]') },
        { code: loinc('8462-4'), valueQuantity: ucum(91, 'mm[Hg]') },
      ],
    },
    {
      resourceType: 'FamilyMemberHistory',
      id: 'fmh-1',
      status: 'completed',
      patient: subject,
      relationship: {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-RoleCode', code: 'FTH' }],
      },
      condition: [
        {
          code: { coding: [{ system: 'http://snomed.info/sct', code: '22298006' }] },
          note: [{ text: 'Quillfeather senior' }],
        },
      ],
    },
    {
      resourceType: 'QuestionnaireResponse',
      id: 'qr-1',
      status: 'completed',
      subject,
      authored: '2026-01-10T09:00:00Z',
      item: [
        { linkId: '/74013-4', answer: [{ valueDecimal: 3 }] },
        { linkId: 'name', text: 'Your name', answer: [{ valueString: 'Ottavia Quillfeather' }] },
      ],
    },
  ];
  return {
    resourceType: 'Bundle',
    type: 'collection',
    entry: entry.map((resource) => ({ resource })),
  };
}

/** The test's config: Prevent on, the webhook to `receiver`, results delivered only when changed. */
function preventConfig(receiver: WebhookReceiver, secret: string): Config {
  const base = testConfig();
  return {
    ...base,
    ingest: { ...base.ingest, tokens: [TOKEN] },
    // The hospital's id of a FHIR Patient is its identifier of this system (LOCAL_ID).
    fhir: { ...base.fhir, patient_identifier_system: 'urn:oid:1.2.3.4' },
    prevent: { enabled: true, every_patient: false, id_key: PREVENT_ID_KEY },
    delivery: {
      ...base.delivery,
      only_changed: true,
      webhook: quickWebhook(base, receiver.url, secret),
    },
  };
}

/** A request to the ingest app, with its bearer token (a body as FHIR JSON unless told). */
const send = (
  url: string,
  path: string,
  method: string,
  body?: unknown,
  type = 'application/fhir+json',
) =>
  fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': type }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

const preventRequests = (requests: RequestLogEntry[]) =>
  requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/patient'));

describe('Prevent when a record changes (ingest app → query engine → signed webhook)', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  /** The pipeline as `start` runs it, built by the composition root, with a real webhook receiver. */
  const startPipeline = () =>
    startIngestWithWebhook({
      config: preventConfig,
      connectionName: 'test-prevent-webhook',
      closers,
    });

  it('registers the preset, runs Prevent on the update and delivers signed recommendations; no identifier reaches the service', async () => {
    const { h, r, url } = await startPipeline();
    const presetPath = `/v1/patients/${encodeURIComponent(LOCAL_ID)}/presets/prevent`;
    const put = await send(url, presetPath, 'PUT');
    expect(put.status).toBe(201);
    const { patient_service_id: psid } = (await put.json()) as { patient_service_id: string };

    const posted = await send(url, '/v1/fhir/Bundle', 'POST', bundle('449868002', 31.4));
    expect(posted.status).toBe(202);
    const accepted = (await posted.json()) as { patient_service_id: string };
    expect(accepted.patient_service_id).toBe(psid);

    const preventEvents = () =>
      r.events.filter((e) => String(e.payload.type).startsWith('prevent.'));
    await r.until(() => preventEvents().length === 1);
    const [received] = preventEvents();
    const event = received?.payload as unknown as ResultEvent;
    // Signed: the receiver verified it with the reference Standard Webhooks verifier.
    expect(r.attempts.find((a) => a.webhookId === event.id)?.verified).toBe(true);
    expect(event).toMatchObject({
      type: 'prevent.completed',
      patient_id: LOCAL_ID,
      patient_service_id: psid,
      ccsr_category: 'prevent',
      status: 'completed',
      concordance: null,
      error: null,
      changed: true,
    });
    const answer = event.prevent as {
      patient_service_id: string;
      recommendations: { rank: number; factor: string }[];
    };
    // The current smoker, BMI 31.4 and 142 mm[Hg] rank first (the local service's ranking).
    const top = new Set(answer.recommendations.slice(0, 3).map((rec) => rec.factor));
    expect(top).toEqual(new Set(['blood_pressure', 'smoking', 'weight']));
    const preventId = answer.patient_service_id;
    expect(preventId).not.toBe(psid);
    // The same event went to the outbound queue: the same channels as the concordance results.
    expect((await h.delivered()).map((e) => [e.type, e.id])).toEqual([[event.type, event.id]]);

    // What the service was sent.
    const requests = await h.requests();
    const calls = preventRequests(requests);
    expect(calls.map((c) => [c.path, c.status])).toEqual([
      ['/v1/patient', 201],
      [`/v1/patient/${preventId}`, 200],
    ]);
    const body = calls[1]?.body as {
      patient_service_id: string;
      patient_biomarkers: Record<string, { valueQuantity: { value: number; code: string } }>;
      patient_history: Record<string, unknown>;
      patient_demographics: { age: number; gender: string };
    };
    expect(body.patient_service_id).toBe(preventId);
    expect(body.patient_demographics).toEqual({ age: 90, gender: 'female' });
    expect(body.patient_biomarkers.bmi?.valueQuantity).toMatchObject({
      value: 31.4,
      code: 'kg/m2',
    });
    expect(body.patient_biomarkers.systolic_blood_pressure?.valueQuantity.value).toBe(142);
    expect(body.patient_history).toMatchObject({
      smoking_status: { status: 'current' },
      alcohol: { drinks_per_day: { valueQuantity: { value: 3 } } },
      family_history: [
        {
          relationship: { code: 'FTH' },
          conditions: [{ system: 'http://snomed.info/sct', code: '22298006' }],
        },
      ],
    });
    // No local identifier, name, free text or display, and not our own service id either.
    const sent = JSON.stringify(requests).toLowerCase();
    for (const marker of [...PLANTED, psid]) expect(sent).not.toContain(marker.toLowerCase());
    expect(JSON.stringify(calls.map((c) => c.body))).not.toContain('display');
    // The unique_patient_identifier was not the local id: registering the local id itself makes
    // another patient, registering its keyed hash finds the pipeline's.
    const client = h.app.serviceClient({ baseUrl: h.simulator.url, apiKey: API_KEY });
    expect(await client.prevent.registerPatient(LOCAL_ID)).not.toBe(preventId);
    const identify = preventIdentifier(PREVENT_ID_KEY);
    expect(await client.prevent.registerPatient(identify(LOCAL_ID))).toBe(preventId);

    // Kept in the crosswalk beside our service id, sealed (the only copy at rest besides the
    // answer itself in the outbound queue's event); nothing identifying at rest or logged.
    expect(await h.crosswalk.preventPatientIdOf(LOCAL_ID, psid)).toBe(preventId);
    const entry = await h.redis.hgetall(h.crosswalk.lookupKeyOf(LOCAL_ID));
    expect(entry.psid).toBe(psid);
    expect(entry.prevent_patient_id).not.toContain(preventId);
    expect(await scanRedisFor(h.redis, h.prefix, PLANTED)).toEqual([]);
    const logs = h.logs.lines.join('\n').toLowerCase();
    for (const marker of PLANTED) expect(logs).not.toContain(marker.toLowerCase());
    expect(logs).not.toContain(preventId);

    // The run is counted with its outcome, written once its result was handed over.
    await h.untilOutcomes(1);
    const metrics = await h.app.metrics.getSingleMetricAsString('cw_prevent_runs_total');
    expect(metrics).toContain('cw_prevent_runs_total{outcome="completed"} 1');
    expect(await h.app.metrics.getSingleMetricAsString('cw_prevent_registrations_total')).toMatch(
      /^cw_prevent_registrations_total 1$/m,
    );
  });

  it('delivers a Prevent result only when it changed (delivery.only_changed), and registers once', async () => {
    const { h, r, url } = await startPipeline();
    await send(url, `/v1/patients/${encodeURIComponent(LOCAL_ID)}/presets/prevent`, 'PUT');
    const prevent = () => r.events.filter((e) => String(e.payload.type).startsWith('prevent.'));
    const runs = () =>
      h.outcomes.filter((o) => o.data.ccsrCategory === 'prevent' && o.result.eventId !== null);

    expect((await send(url, '/v1/fhir/Bundle', 'POST', bundle('449868002', 31.4))).status).toBe(
      202,
    );
    await r.until(() => prevent().length === 1);
    // A change that Prevent's payload does not see (a BMI beyond the two decimals sent): the run
    // gives the same recommendations, which are not delivered again.
    expect((await send(url, '/v1/fhir/Bundle', 'POST', bundle('449868002', 31.4001))).status).toBe(
      202,
    );
    // The router drops the unchanged result before the run's outcome is written.
    await h.untilOutcomes(2);
    await h.logs.waitFor((e) => e.msg === 'result unchanged: not delivered');
    // The patient quit smoking: new recommendations, delivered.
    expect((await send(url, '/v1/fhir/Bundle', 'POST', bundle('8517006', 31.4))).status).toBe(202);
    await r.until(() => prevent().length === 2);
    expect(prevent().map((e) => [e.payload.type, e.payload.changed])).toEqual([
      ['prevent.completed', true],
      ['prevent.completed', true],
    ]);
    // A run's outcome is written once its result is handed over, which is when the webhook can
    // already have it: wait for the third outcome rather than race it (the CI run of 93865af lost).
    await h.untilOutcomes(3);
    expect(runs()).toHaveLength(3);
    // One registration for the three runs: later runs find the Prevent id in the crosswalk.
    const calls = preventRequests(await h.requests());
    expect(calls.filter((c) => c.path === '/v1/patient')).toHaveLength(1);
    expect(calls.filter((c) => c.path !== '/v1/patient')).toHaveLength(3);
  });

  /** A pipeline whose results go to the outbound queue, with Prevent for every patient. */
  async function everyPatient(idKey: string | undefined) {
    const base = testConfig();
    const config: Config = {
      ...base,
      ingest: { ...base.ingest, tokens: [TOKEN] },
      prevent: {
        enabled: true,
        every_patient: true,
        ...(idKey === undefined ? {} : { id_key: idKey }),
      },
    };
    const h = await PipelineHarness.start({ config });
    closers.unshift(() => h.close());
    await h.startWorker();
    const ingest = await h.app.ingestApp(h.app.ingestParts());
    closers.unshift(() => ingest.close());
    const url = await ingest.listen({ port: 0, host: '127.0.0.1' });
    const record = { patient_id: LOCAL_ID, assembled_patient: sampleRecord('every-1') };
    const update = await send(url, '/v1/record-updates', 'POST', record, 'application/json');
    expect(update.status).toBe(202);
    const answer = (await update.json()) as { queries: { ccsr_category: string }[] };
    expect(answer.queries.map((q) => q.ccsr_category)).toEqual(['prevent']);
    const presets = await send(url, `/v1/patients/${encodeURIComponent(LOCAL_ID)}/presets`, 'GET');
    expect(((await presets.json()) as { presets: unknown[] }).presets).toEqual([
      { ccsr_category: 'prevent', source: 'rule' },
    ]);
    await h.untilOutcomes(1);
    const [event] = await h.delivered();
    return { h, event };
  }

  it('runs for every patient by config, on a JSON AssembledPatient too', async () => {
    const { h, event } = await everyPatient(PREVENT_ID_KEY);
    expect(event).toMatchObject({
      type: 'prevent.completed',
      patient_id: LOCAL_ID,
      ccsr_category: 'prevent',
      error: null,
    });
    const [, recommend] = preventRequests(await h.requests());
    // The record's HbA1c node (8.1 %) and its demographics.
    expect(recommend?.body).toMatchObject({
      patient_biomarkers: { hba1c: { valueQuantity: { value: 8.1, code: '%' } } },
      patient_history: {},
      patient_demographics: { age: 58, gender: 'female' },
    });
    expect(JSON.stringify(recommend?.body)).not.toContain(LOCAL_ID);
  });

  it('ends failed with ERR_PREVENT_NOT_CONFIGURED on a worker without PREVENT_ID_KEY; nothing is sent', async () => {
    const { h, event } = await everyPatient(undefined);
    expect(event).toMatchObject({
      type: 'prevent.failed',
      status: 'failed',
      ccsr_category: 'prevent',
      prevent: null,
      error: { code: 'ERR_PREVENT_NOT_CONFIGURED' },
    });
    expect(isResultErrorCode(event?.error?.code ?? '')).toBe(true);
    expect(preventRequests(await h.requests())).toEqual([]);
    expect(await h.app.metrics.getSingleMetricAsString('cw_prevent_runs_total')).toContain(
      'cw_prevent_runs_total{outcome="failed"} 1',
    );
  });

  it('`concordance-worker start` with PREVENT_ID_KEY from the environment: a planted FHIR Bundle gets its recommendations; nothing identifying in what the service got or any log line', async () => {
    const p = await startPipelineProcesses({
      apiKey: 'prevent-process-api-key',
      token: TOKEN,
      configLines: [
        ...FAST_FEED_PIPELINE_LINES,
        'fhir:',
        '  patient_identifier_system: urn:oid:1.2.3.4',
        'prevent:',
        '  enabled: true',
        '  every_patient: true',
      ],
      env: { PREVENT_ID_KEY },
    });
    closers.push(() => p.close());
    const posted = await send(p.ingestUrl, '/v1/fhir/Bundle', 'POST', bundle('449868002', 27.5));
    expect(posted.status).toBe(202);
    const [event] = await eventually(
      () => p.delivered(),
      (events) => events.some((e) => e.type === 'prevent.completed'),
      { timeoutMs: 30_000 },
    );
    expect(event).toMatchObject({ type: 'prevent.completed', patient_id: LOCAL_ID });
    const requests = await p.requests();
    expect(requests.filter((r) => r.path.startsWith('/v1/patient')).map((r) => r.status)).toEqual([
      201, 200,
    ]);
    expect(await p.start.stop('SIGTERM')).toBe(0);
    const sent = JSON.stringify(requests).toLowerCase();
    const logs = [...p.start.lines, ...p.simulator.lines].join('\n').toLowerCase();
    for (const marker of [...PLANTED, PREVENT_ID_KEY]) {
      expect(sent).not.toContain(marker.toLowerCase());
      expect(logs).not.toContain(marker.toLowerCase());
    }
  });

  it('registers the patient again, under the same identifier, when the service no longer knows its id', async () => {
    const base = testConfig();
    const h = await PipelineHarness.start({
      config: { ...base, prevent: { enabled: true, every_patient: false, id_key: PREVENT_ID_KEY } },
    });
    closers.unshift(() => h.close());
    const first = await h.startWorker();
    const { patientServiceId } = await h.update(
      LOCAL_ID,
      ['prevent'],
      sampleRecord('lost-1'),
      'ev-lost-1',
    );
    await h.untilOutcomes(1);
    const before = await h.crosswalk.preventPatientIdOf(LOCAL_ID, patientServiceId);
    expect(before).toBeDefined();
    await first.close();

    // Another service, whose registry never saw the patient (as after a reset of the service).
    const other = await startSimulator({ port: 0, apiKeys: [API_KEY], seed: 77 });
    closers.push(() => other.close());
    await h.startWorker(API_KEY, other.url);
    await h.update(LOCAL_ID, ['prevent'], sampleRecord('lost-2'), 'ev-lost-2');
    await h.untilOutcomes(2);
    expect(h.outcomes.map((o) => o.result.outcome)).toEqual(['completed', 'completed']);
    const after = await h.crosswalk.preventPatientIdOf(LOCAL_ID, patientServiceId);
    const log = (await (
      await fetch(`${other.url}/_admin/requests`, { headers: { 'x-admin-key': API_KEY } })
    ).json()) as RequestLogEntry[];
    expect(preventRequests(log).map((r) => [r.path, r.status])).toEqual([
      [`/v1/patient/${before}`, 404],
      ['/v1/patient', 201],
      [`/v1/patient/${after}`, 200],
    ]);
    expect(after).not.toBe(before);
    // Under the same identifier: the keyed hash of the local id finds that id.
    const client = h.app.serviceClient({ baseUrl: other.url, apiKey: API_KEY });
    expect(await client.prevent.registerPatient(preventIdentifier(PREVENT_ID_KEY)(LOCAL_ID))).toBe(
      after,
    );
    expect(await h.app.metrics.getSingleMetricAsString('cw_prevent_registrations_total')).toMatch(
      /^cw_prevent_registrations_total 2$/m,
    );
  });
});
