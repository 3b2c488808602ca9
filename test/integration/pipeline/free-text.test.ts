import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { eventually } from '../../support/eventually.ts';
import { redisKeys, scanRedisFor } from '../../support/scan-redis.ts';
import {
  FAST_FEED_PIPELINE_LINES,
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';

const API_KEY = 'free-text-e2e-api-key';
const TOKEN = 'free-text-e2e-ingest-token-0123456789';
const ICD = 'http://hl7.org/fhir/sid/icd-10-cm';
const CANONICAL_E119 = 'Type 2 diabetes mellitus without complications';

/**
 * Free text planted in every place a feed can carry it. Each marker is one made-up word, so that a
 * marker found anywhere in the service's request log (the parsed bodies it received) is a leak.
 */
const MARKERS = {
  jsonDisplay: 'Fxtjsondisplay',
  jsonLoincDisplay: 'Fxtjsonloinc',
  jsonPreferredName: 'Fxtjsonpreferred',
  jsonNodeNote: 'Fxtjsonnodenote',
  jsonMetadataNote: 'Fxtjsonmetanote',
  jsonMetadataComment: 'Fxtjsonmetacomment',
  jsonNarrative: 'Fxtjsonnarrative',
  jsonUnknownMetadata: 'Fxtjsonunknownmeta',
  jsonSentence: 'Fxtjsonsentence',
  hl7Dg1Text: 'Fxthldgtext',
  hl7ObxText: 'Fxthlobxtext',
  hl7NteAdt: 'Fxthlnteadt',
  hl7NteOru: 'Fxthlnteoru',
  hl7CweValueText: 'Fxthlcwevalue',
  fhirCodeText: 'Fxtfhircodetext',
  fhirDisplay: 'Fxtfhirdisplay',
  fhirNote: 'Fxtfhirnote',
  fhirNarrative: 'Fxtfhirnarrative',
  fhirObservationNote: 'Fxtfhirobsnote',
  fhirObservationDisplay: 'Fxtfhirobsdisplay',
};
const M = MARKERS;

describe('no free text reaches the service (concordance-worker start + simulator)', () => {
  let p: PipelineProcesses;

  beforeAll(async () => {
    p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      configLines: [...FAST_FEED_PIPELINE_LINES],
    });
  });
  afterAll(() => p.close());

  const auth = { authorization: `Bearer ${TOKEN}` };

  /** The completed END002 event of a patient, once it has arrived. */
  const completedFor = (patientId: string) =>
    eventually(
      async () =>
        (await p.delivered()).find(
          (e) => e.patient_id === patientId && e.ccsr_category === 'END002',
        ),
      (found) => found !== undefined,
      { timeoutMs: 30_000 },
    ) as Promise<ResultEvent>;

  /** A meaningful verdict: the diagnosis recommendation is concordant, citing a node. */
  function expectMatched(event: ResultEvent) {
    expect(event).toMatchObject({ status: 'completed', error: null });
    const concordance = event.concordance as {
      flags: string[];
      recommendations: { verdict: string; evidence_node_ids: string[] }[];
    };
    expect(concordance.flags).not.toContain('no_matching_nodes');
    expect(concordance.recommendations[0]?.verdict).toBe('concordant');
    expect(concordance.recommendations[0]?.evidence_node_ids.length).toBeGreaterThan(0);
  }

  it('JSON, HL7 v2 and FHIR records with planted free text and ids: verdicts match, no marker is sent or rests in Redis', async () => {
    // 1. A JSON record update.
    const json = await fetch(`${p.ingestUrl}/v1/record-updates`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        patient_id: 'FT-JSON-1',
        ccsr_categories: ['END002'],
        assembled_patient: {
          nodes: [
            {
              id: 'c1',
              node_type: 'condition',
              notable: true,
              service_preferred_name: M.jsonPreferredName,
              coding: [{ system: ICD, code: 'E11.9', display: `${M.jsonDisplay} sugar` }],
              note: [{ text: `${M.jsonNodeNote}: patient anxious about injections` }],
              text: { status: 'generated', div: `<div>${M.jsonNarrative}</div>` },
              metadata: {
                status: 'active',
                problem_list: true,
                note: M.jsonMetadataNote,
                comment: `${M.jsonMetadataComment} discussed with family`,
                author_remarks: M.jsonUnknownMetadata,
              },
            },
            {
              id: 'o1',
              node_type: 'observation',
              notable: true,
              coding: [{ system: 'http://loinc.org', code: '4548-4', display: M.jsonLoincDisplay }],
              metadata: {
                value: 8.1,
                unit: '%',
                interpretation: `${M.jsonSentence} high again after the holidays as expected`,
              },
            },
          ],
          relationships: [{ source_id: 'o1', target_id: 'c1' }],
          demographics: { age: 58, gender: 'female' },
        },
      }),
    });
    expect(json.status).toBe(202);

    // 2. HL7 v2: an ADT with the diagnosis text and a note, then an ORU with a result and a note.
    const born = `${new Date().getUTCFullYear() - 61}0415`;
    const pid = `PID|1||FTHL7MRN1^^^HOSP^MR||Testpatient^Ann||${born}|F`;
    const adt = [
      'MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||ADT^A08^ADT_A01|FT-ADT-1|P|2.5.1',
      pid,
      `DG1|1||E11.9^${M.hl7Dg1Text} diabetes^I10`,
      `NTE|1||${M.hl7NteAdt} patient prefers afternoon visits`,
    ].join('\r');
    const oru = [
      'MSH|^~\\&|LAB|HOSP|CW|HOSP|20260101130000||ORU^R01^ORU_R01|FT-ORU-1|P|2.5.1',
      pid,
      'OBR|1|||4548-4^HbA1c^LN|||20260101120000',
      `OBX|1|NM|4548-4^${M.hl7ObxText}^LN||8.4|%|4.0-5.6|H|||F`,
      `OBX|2|CWE|5195-3^HBsAg^LN||260385009^${M.hl7CweValueText}^SCT||||||F`,
      `NTE|1||${M.hl7NteOru} sample slightly haemolysed`,
    ].join('\r');
    for (const [message, id] of [
      [adt, 'FT-ADT-1'],
      [oru, 'FT-ORU-1'],
    ] as const) {
      const ack = await sendOne(p.mllpPort, message);
      expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', id]);
    }

    // 3. A FHIR Bundle: code.text, coding.display, notes and narrative.
    const bundle = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [
        {
          resource: {
            resourceType: 'Patient',
            id: 'FT-FHIR-1',
            gender: 'male',
            birthDate: `${new Date().getUTCFullYear() - 70}-02-11`,
          },
        },
        {
          resource: {
            resourceType: 'Condition',
            id: 'ft-cond-1',
            subject: { reference: 'Patient/FT-FHIR-1' },
            text: { status: 'generated', div: `<div>${M.fhirNarrative}</div>` },
            clinicalStatus: { coding: [{ code: 'active' }] },
            category: [{ coding: [{ code: 'problem-list-item' }] }],
            code: {
              coding: [{ system: ICD, code: 'E11.9', display: M.fhirDisplay }],
              text: `${M.fhirCodeText} diabetes, diet controlled`,
            },
            note: [{ text: `${M.fhirNote}: lives alone, daughter visits weekly` }],
          },
        },
        {
          resource: {
            resourceType: 'Observation',
            id: 'ft-obs-1',
            status: 'final',
            subject: { reference: 'Patient/FT-FHIR-1' },
            code: {
              coding: [
                { system: 'http://loinc.org', code: '4548-4', display: M.fhirObservationDisplay },
              ],
            },
            valueQuantity: { value: 7.9, unit: '%' },
            interpretation: [{ coding: [{ code: 'H' }] }],
            note: [{ text: M.fhirObservationNote }],
          },
        },
      ],
    };
    const fhir = await fetch(`${p.ingestUrl}/v1/fhir/Bundle`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(bundle),
    });
    expect(fhir.status).toBe(202);

    // Every query completes with a verdict for the category its ICD-10-CM code maps to.
    for (const patientId of ['FT-JSON-1', 'HOSP|FTHL7MRN1', 'FT-FHIR-1']) {
      expectMatched(await completedFor(patientId));
    }

    // The service received the canonical name and none of the planted text.
    const requests = await p.requests();
    const submissions = requests.filter((r) => r.method === 'POST' && r.path === '/v1/concordance');
    expect(submissions.length).toBeGreaterThanOrEqual(3);
    const sent = JSON.stringify(requests).toLowerCase();
    for (const [where, marker] of Object.entries(MARKERS)) {
      expect(sent, where).not.toContain(marker.toLowerCase());
    }
    expect(sent).toContain(CANONICAL_E119.toLowerCase());
    for (const submission of submissions) {
      const { nodes } = (submission.body as { assembled_patient: { nodes: object[] } })
        .assembled_patient;
      const diabetes = nodes.find((node) =>
        (node as { coding: { code: string }[] }).coding.some((c) => c.code === 'E11.9'),
      );
      expect(diabetes).toMatchObject({
        coding: [{ system: ICD, code: 'E11.9', display: CANONICAL_E119 }],
      });
    }
    // Nor did a log line of the pipeline carry it.
    const logs = p.start.lines.join('\n').toLowerCase();
    for (const [where, marker] of Object.entries(MARKERS)) {
      expect(logs, where).not.toContain(marker.toLowerCase());
    }

    // Nothing identifying, and none of the free text, rests in Redis in plain text: every key
    // name and value of every type (records, crosswalk, query state, the due set, BullMQ job data
    // and events of the query queue and the outbound queue) after the whole run.
    const planted = [
      'FT-JSON-1',
      'FTHL7MRN1',
      'FT-FHIR-1',
      'Testpatient',
      'ft-cond-1',
      ...Object.values(MARKERS),
    ];
    expect(await scanRedisFor(p.redis, p.prefix, planted)).toEqual([]);
    expect((await redisKeys(p.redis, p.prefix)).length).toBeGreaterThan(10);

    // The removals are counted by kind (the ingest API serves the process's one registry).
    const metrics = await (await fetch(`${p.ingestUrl}/metrics`)).text();
    const removed = (kind: string) =>
      Number(
        new RegExp(`^cw_free_text_removed_total\\{kind="${kind}"\\} (\\d+)`, 'm').exec(
          metrics,
        )?.[1] ?? 0,
      );
    // JSON: E11.9 and LOINC displays, the preferred name; HL7: DG1 and OBX texts; FHIR: two displays.
    expect(removed('display')).toBeGreaterThanOrEqual(7);
    // JSON: the node's note, the metadata note and comment (FHIR notes never enter the record).
    expect(removed('note')).toBeGreaterThanOrEqual(3);
    expect(removed('narrative')).toBeGreaterThanOrEqual(1);
    expect(removed('metadata')).toBeGreaterThanOrEqual(2);
  });
});
