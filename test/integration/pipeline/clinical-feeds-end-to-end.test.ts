import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import {
  FAST_FEED_PIPELINE_LINES,
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';

const API_KEY = 'hl7-e2e-api-key';
const TOKEN = 'hl7-e2e-ingest-token-0123456789';
const MRN = 'PLNT77120';
const PLANTED = [
  'PLNT77120',
  'Zorbington',
  'Philomena',
  '912-33-4455',
  '912334455',
  '5557771234',
  'Marblequarry',
];

/** A problem-list message: PC1 adds, PC3 deletes; the patient is 97 and every PID field is planted. */
function ppr(trigger: 'PC1' | 'PC3', controlId: string): string {
  const born = `${new Date().getUTCFullYear() - 97}0301`;
  return [
    `MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||PPR^${trigger}|${controlId}|P|2.5.1`,
    `PID|1||${MRN}^^^HOSP^MR~912-33-4455^^^SSA^SS||Zorbington^Philomena^Q||${born}|F|||77 Marblequarry Road^^Springfield^IL^62704||(555)777-1234`,
    `PRB|${trigger === 'PC1' ? 'AD' : 'DE'}|20260101120000|E11.9^Type 2 diabetes mellitus without complications^I10|PRB-1||||||||||ACTIVE`,
  ].join('\r');
}

describe('clinical feeds end to end (concordance-worker start + simulator)', () => {
  let p: PipelineProcesses;
  let ingestUrl: string;
  let mllpPort: number;

  beforeAll(async () => {
    p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      configLines: [...FAST_FEED_PIPELINE_LINES],
    });
    ingestUrl = p.ingestUrl;
    mllpPort = p.mllpPort;
  });
  afterAll(() => p.close());

  const presets = async () => {
    const response = await fetch(
      `${ingestUrl}/v1/patients/${encodeURIComponent(`HOSP|${MRN}`)}/presets`,
      {
        headers: { authorization: `Bearer ${TOKEN}` },
      },
    );
    return ((await response.json()) as { presets: { ccsr_category: string; source: string }[] })
      .presets;
  };

  it('E11.9 on the problem list runs END002 and its result arrives; no identifier reaches the service; deleting the problem removes the preset', async () => {
    const ack = await sendOne(mllpPort, ppr('PC1', 'CTRL-PC1-1'));
    expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', 'CTRL-PC1-1']);
    expect(await presets()).toEqual([
      expect.objectContaining({ ccsr_category: 'END002', source: 'problem_list' }),
    ]);

    const [event] = await eventually(
      () => p.delivered(),
      (events) => events.length === 1,
      { timeoutMs: 30_000 },
    );
    expect(event?.error).toBeNull();
    expect(event).toMatchObject({
      status: 'completed',
      ccsr_category: 'END002',
      patient_id: `HOSP|${MRN}`,
    });

    const requests = await p.requests();
    const [submission] = requests.filter(
      (r) => r.method === 'POST' && r.path === '/v1/concordance',
    );
    const body = submission?.body as { assembled_patient: { demographics: { age: number } } };
    expect(body.assembled_patient.demographics.age).toBe(90);
    const sent = JSON.stringify(requests).toLowerCase();
    const logs = p.start.lines.join('\n').toLowerCase();
    for (const marker of PLANTED) {
      expect(sent).not.toContain(marker.toLowerCase());
      expect(logs).not.toContain(marker.toLowerCase());
    }

    const deleted = await sendOne(mllpPort, ppr('PC3', 'CTRL-PC3-1'));
    expect(segmentOf(deleted ?? '', 'MSA').slice(1, 3)).toEqual(['AA', 'CTRL-PC3-1']);
    expect(await presets()).toEqual([]);
  });

  it('a FHIR Bundle with a planted Patient: END002 runs on it, age 97 is sent as 90, no identifier reaches the service or a log', async () => {
    const born = `${new Date().getUTCFullYear() - 97}-06-30`;
    const bundle = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [
        {
          resource: {
            resourceType: 'Patient',
            id: 'fhir-pt-PLNTFHIR31',
            identifier: [
              { system: 'urn:oid:1.2.3.4', value: 'PLNTFHIR31' },
              { system: 'http://hl7.org/fhir/sid/us-ssn', value: '812-44-9901' },
            ],
            name: [{ family: 'Vexillary', given: ['Ottoline'] }],
            telecom: [{ system: 'phone', value: '555-303-9911' }],
            gender: 'male',
            birthDate: born,
            address: [{ line: ['19 Quillbrook Lane'], city: 'Springfield', postalCode: '62704' }],
          },
        },
        {
          resource: {
            resourceType: 'Condition',
            id: 'cond-1',
            subject: { reference: 'Patient/fhir-pt-PLNTFHIR31' },
            clinicalStatus: { coding: [{ code: 'active' }] },
            category: [{ coding: [{ code: 'problem-list-item' }] }],
            code: { coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }] },
          },
        },
      ],
    };
    const posted = await fetch(`${ingestUrl}/v1/fhir/Bundle`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(bundle),
    });
    expect(posted.status).toBe(202);
    const { patient_service_id: psid } = (await posted.json()) as { patient_service_id: string };

    const event = await eventually(
      async () => (await p.delivered()).find((e) => e.patient_service_id === psid),
      (found) => found !== undefined,
      { timeoutMs: 30_000 },
    );
    expect(event).toMatchObject({
      status: 'completed',
      ccsr_category: 'END002',
      patient_id: 'fhir-pt-PLNTFHIR31',
    });

    const requests = await p.requests();
    const submission = requests
      .filter((r) => r.method === 'POST' && r.path === '/v1/concordance')
      .at(-1);
    const body = submission?.body as { assembled_patient: { demographics: { age: number } } };
    expect(body.assembled_patient.demographics.age).toBe(90);
    const sent = JSON.stringify(requests).toLowerCase();
    const logs = p.start.lines.join('\n').toLowerCase();
    const planted = [
      'PLNTFHIR31',
      '812-44-9901',
      '812449901',
      'Vexillary',
      'Ottoline',
      '5553039911',
      'Quillbrook',
      born,
      born.replaceAll('-', ''),
    ];
    for (const marker of planted) {
      expect(sent).not.toContain(marker.toLowerCase());
      expect(logs).not.toContain(marker.toLowerCase());
    }
  });
});
