import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  controlIdOf,
  fixture,
  fixtureNames,
  segmentOf,
  sendOne,
  startHl7v2Harness,
  withCr,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

/**
 * The right answer for each fixture: all AA since issue 9. ORU-R01-01 identifies the patient only by
 * a `PI` id (the default rules take it after MR), and the PC2/PC3 samples put `MR` in PID-3.6 (an
 * extra `^`), so their id is accepted as a bare id ("first non-empty repetition").
 */
const EXPECTED_CODE: Record<string, 'AA' | 'AE'> = {};

describe('HL7 v2 fixtures over MLLP, with the real ClinicalUpdates on Redis', () => {
  let h: Hl7v2Harness;
  beforeAll(async () => {
    h = await startHl7v2Harness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('has the 30 fixtures', () => {
    expect(fixtureNames()).toHaveLength(30);
  });

  for (const name of fixtureNames()) {
    for (const [variant, text] of [
      ['as stored', () => fixture(name)],
      ['with CR separators', () => withCr(fixture(name))],
    ] as const) {
      it(`${name} ${variant}: ACK with MSA-2 = MSH-10`, async () => {
        const message = text();
        const ack = await sendOne(h.mllp.port, message);
        expect(ack).toBeDefined();
        const msa = segmentOf(ack ?? '', 'MSA');
        expect(msa[1]).toBe(EXPECTED_CODE[name] ?? 'AA');
        expect(msa[2]).toBe(controlIdOf(message));
        const msh = segmentOf(ack ?? '', 'MSH');
        expect(msh[8]?.startsWith('ACK^')).toBe(true);
        if (msa[1] === 'AE') expect(segmentOf(ack ?? '', 'ERR').length).toBeGreaterThan(0);
      });
    }
  }

  it('ADT DG1 became a condition and PID became identity facets', async () => {
    await sendOne(h.mllp.port, fixture('ADT-A01-01.hl7'));
    const clinical = (await h.clinicalOf('test1|PATID1234'))?.clinical;
    expect(clinical?.items['hl7:dg1:snomed:422504002']).toMatchObject({
      kind: 'condition',
      codings: [{ system: 'http://snomed.info/sct', code: '422504002' }],
      status: 'active',
      problemList: false,
      source: 'hl7v2',
    });
    expect(clinical?.patient.birthDate).toBe('1988-08-18');
    expect(clinical?.patient.gender).toBe('M');
    expect(clinical?.patient.identifiers).toContain('PATID1234');
  });

  it('ORU OBX results became observations, numeric with unit and interpretation', async () => {
    await sendOne(h.mllp.port, fixture('LAB-ORU-2.hl7'));
    const clinical = (await h.clinicalOf('1|10006579'))?.clinical;
    expect(clinical?.items['hl7:obx:20509-6']).toMatchObject({
      kind: 'observation',
      codings: [{ system: 'http://loinc.org', code: '20509-6' }],
      value: 13.4,
      unit: 'g/l-1',
      interpretation: 'N',
      status: 'final',
    });
    expect(Object.keys(clinical?.items ?? {}).filter((k) => k.startsWith('hl7:obx:'))).toHaveLength(
      10,
    );
  });

  it('PPR PC1 added a problem-list condition; a corrected PC3 removes it', async () => {
    await sendOne(h.mllp.port, fixture('PC1-Problem-Add-v2.3.1.hl7'));
    const added = (await h.clinicalOf('WEST|10290'))?.clinical;
    expect(added?.items['hl7:problem:26744']).toMatchObject({
      kind: 'condition',
      codings: [{ system: 'http://hl7.org/fhir/sid/icd-9-cm', code: '596.5' }],
      status: 'active',
      problemList: true,
    });
    const remove = fixture('PC1-Problem-Delete-v2.3.1.hl7')
      .replace('10292^^^^WEST^MR', '10290^^^WEST^MR')
      .replace('|26806|', '|26744|');
    const ack = await sendOne(h.mllp.port, withCr(remove));
    expect(segmentOf(ack ?? '', 'MSA')[1]).toBe('AA');
    const after = (await h.clinicalOf('WEST|10290'))?.clinical;
    expect(after?.items['hl7:problem:26744']).toBeUndefined();
  });

  it('a corrected PC2 updates the problem status (lower-cased)', async () => {
    const update = fixture('PC1-Problem-Update-v2.3.1.hl7').replace(
      '10291^^^^WEST^MR',
      '10291^^^WEST^MR',
    );
    const ack = await sendOne(h.mllp.port, update);
    expect(segmentOf(ack ?? '', 'MSA')[1]).toBe('AA');
    const clinical = (await h.clinicalOf('WEST|10291'))?.clinical;
    expect(clinical?.items['hl7:problem:26793']).toMatchObject({
      status: 'resolved',
      problemList: true,
    });
  });

  it('A40 merges the prior patient into the surviving one', async () => {
    const prior = fixture('PC1-Problem-Add-v2.3.1.hl7').replace(
      '10290^^^WEST^MR',
      '56789^^^BCBS^MR',
    );
    expect(segmentOf((await sendOne(h.mllp.port, prior)) ?? '', 'MSA')[1]).toBe('AA');
    const ack = await sendOne(h.mllp.port, fixture('ADT-A40-01.hl7'));
    expect(segmentOf(ack ?? '', 'MSA')[1]).toBe('AA');
    const surviving = (await h.clinicalOf('BCBS|12345'))?.clinical;
    expect(surviving?.items['hl7:problem:26744']).toBeDefined();
  });

  it('counts messages by type and outcome', async () => {
    const noId = fixture('ADT-A01-01.hl7').replace(/^PID\|1\|[^|]*\|[^|]*\|[^|]*\|/m, 'PID|1||||');
    expect(segmentOf((await sendOne(h.mllp.port, noId)) ?? '', 'MSA')[1]).toBe('AE');
    const text = await h.registry.getSingleMetricAsString('cw_hl7v2_messages_total');
    expect(text).toContain('# HELP cw_hl7v2_messages_total');
    expect(text).toMatch(/type="ADT\^A01",outcome="accepted"/);
    expect(text).toMatch(/outcome="ignored"/);
    expect(text).toMatch(/outcome="rejected"/);
  });
});
