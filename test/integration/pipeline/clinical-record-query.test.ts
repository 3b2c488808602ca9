import { afterEach, describe, expect, it } from 'vitest';
import { ClinicalUpdates } from '../../../src/ingest/clinical-updates.ts';
import { CODE_SYSTEMS } from '../../../src/records/clinical-record.ts';
import { PipelineHarness } from '../../support/pipeline-harness.ts';

const MARKERS = {
  mrn: 'PLNT-MRN-88231',
  name: 'Quaxley^Wendolyn^Marisol',
  ssn: '987-65-4329',
  phone: '(555) 867-5309',
  address: '4242 Plantedmarker Avenue^^Springfield^IL^62704',
};

describe('a query on a record kept by the clinical feeds', () => {
  let harness: PipelineHarness;
  afterEach(() => harness.close());

  it('assembles it at submit time: age 97 sent as 90, no identifier reaches the service or a log', async () => {
    harness = await PipelineHarness.start();
    await harness.startWorker();
    const now = new Date();
    const birth = new Date(Date.UTC(now.getUTCFullYear() - 97, 0, 15)).toISOString().slice(0, 10);
    const updates = new ClinicalUpdates({
      crosswalk: harness.crosswalk,
      records: harness.records,
      committer: harness.committer,
      rules: [],
      problemList: { enabled: true, categories: 'outpatient_default' },
    });
    await updates.apply({
      localId: MARKERS.mrn,
      source: 'hl7v2',
      eventId: 'hl7v2:test:1',
      kinds: ['Condition'],
      changes: [
        {
          type: 'patient',
          facets: {
            names: [MARKERS.name],
            identifiers: [MARKERS.mrn, MARKERS.ssn],
            birthDate: birth,
            gender: 'F',
            phones: [MARKERS.phone],
            addresses: [MARKERS.address],
          },
        },
        {
          type: 'upsert',
          item: {
            key: 'hl7:dg1:icd10cm:E11.9',
            kind: 'condition',
            codings: [{ system: CODE_SYSTEMS.icd10cm, code: 'E11.9', display: 'Type 2 diabetes' }],
            status: 'active',
            source: 'hl7v2',
          },
        },
      ],
    });
    await harness.untilOutcomes(1);

    const [submission] = await harness.submissions();
    const body = submission?.body as {
      ccsr_category: string;
      assembled_patient: { demographics: { age: number; gender: string }; nodes: unknown[] };
    };
    expect(body.ccsr_category).toBe('END002');
    expect(body.assembled_patient.demographics).toMatchObject({ age: 90, gender: 'female' });
    expect(body.assembled_patient.nodes).toHaveLength(1);

    const sent = JSON.stringify(await harness.requests());
    const logs = harness.logs.lines.join('\n');
    const forms = [
      MARKERS.mrn,
      'Quaxley',
      'Wendolyn',
      'Marisol',
      MARKERS.ssn,
      '987654329',
      '8675309',
      'Plantedmarker',
      birth,
      birth.replaceAll('-', ''),
    ];
    for (const form of forms) {
      expect(sent).not.toContain(form);
      expect(logs).not.toContain(form);
    }
    const [event] = await harness.delivered();
    expect(event).toMatchObject({
      status: 'completed',
      ccsr_category: 'END002',
      record_version: 1,
    });
  });
});
