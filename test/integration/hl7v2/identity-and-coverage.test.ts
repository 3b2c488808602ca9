import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dueQueries } from '../../support/ingest-stack.ts';
import {
  frame,
  MllpClient,
  segmentOf,
  sendOne,
  startHl7v2Harness,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

/** Messages copied from other projects: see test/fixtures/hl7v2/SOURCES.md. */
const OWN_FIXTURES = new URL('../../fixtures/hl7v2/', import.meta.url);
const ownFixture = (name: string) => readFileSync(new URL(name, OWN_FIXTURES), 'utf8');

let control = 0;
function msg(type: string, ...segments: string[]): string {
  control += 1;
  return [
    `MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||${type}|IDC-${control}|P|2.5.1`,
    ...segments,
  ].join('\r');
}
const pid = (cx: string, born = '19500101') => `PID|1||${cx}||Doe^Jane||${born}|F`;
const msa = (ack: string | undefined) => segmentOf(ack ?? '', 'MSA');

describe('HL7 v2 patient identity and message coverage (MLLP, real Redis)', () => {
  let h: Hl7v2Harness;
  beforeAll(async () => {
    h = await startHl7v2Harness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('a v2.3 BAR^P01 with a bare PID-3 id (node-hl7-complete) is taken, keyed by the id alone', async () => {
    const ack = await sendOne(h.mllp.port, ownFixture('BAR-P01-bare-id-v2.3.hl7'));
    expect(msa(ack)[1]).toBe('AA');
    expect((await h.clinicalOf('3000222452'))?.clinical?.patient.birthDate).toBe('1993-11-14');
  });

  it('a DFT^P03 DG1 coded the old way (DG1-2 ICD9) becomes an ICD-9-CM condition', async () => {
    const ack = await sendOne(h.mllp.port, ownFixture('DFT-P03-dg1-icd9-v2.5.hl7'));
    expect(msa(ack)[1]).toBe('AA');
    const clinical = (await h.clinicalOf('MR|10476'))?.clinical;
    expect(clinical?.items['hl7:dg1:icd9cm:V76.12']).toMatchObject({
      kind: 'condition',
      codings: [{ system: 'http://hl7.org/fhir/sid/icd-9-cm', code: 'V76.12' }],
    });
    expect(clinical?.items['hl7:dg1:icd9cm:959.7']).toBeDefined();
  });

  it('equal numbers from two assigning authorities stay two patients', async () => {
    for (const authority of ['NORTH', 'SOUTH']) {
      const ack = await sendOne(h.mllp.port, msg('ADT^A04', pid(`777^^^${authority}^MR`)));
      expect(msa(ack)[1]).toBe('AA');
    }
    const north = await h.crosswalk.find('NORTH|777');
    const south = await h.crosswalk.find('SOUTH|777');
    expect(north).toBeDefined();
    expect(south).toBeDefined();
    expect(north).not.toBe(south);
    expect(await h.crosswalk.find('777')).toBeUndefined();
  });

  it('an old-version id in PID-2 only: AA, and AA again for the same message (nothing changes)', async () => {
    // Nothing but the id: before PID-2 was kept as an identifier, the second copy found a
    // patient without a record and could not be stored.
    const text = msg('ORM^O01', 'PID|1|V22-1|');
    expect(msa(await sendOne(h.mllp.port, text))[1]).toBe('AA');
    expect(msa(await sendOne(h.mllp.port, text))[1]).toBe('AA');
    const clinical = (await h.clinicalOf('V22-1'))?.clinical;
    expect(clinical?.patient.identifiers).toContain('V22-1');
  });

  it('prefers MR over PI in the same PID-3, and PI alone is accepted', async () => {
    await sendOne(h.mllp.port, msg('ADT^A08', pid('P1^^^HOSP^PI~M1^^^HOSP^MR')));
    expect(await h.crosswalk.find('HOSP|M1')).toBeDefined();
    expect(await h.crosswalk.find('HOSP|P1')).toBeUndefined();
    await sendOne(h.mllp.port, msg('ADT^A28', pid('P2^^^HOSP^PI')));
    expect(await h.crosswalk.find('HOSP|P2')).toBeDefined();
  });

  it('DG1 and PRB codes in ICD-10-CM under each usual name, ICD-9-CM and SNOMED CT keep their FHIR systems', async () => {
    const systems = ['I10', 'ICD10CM', 'ICD-10-CM', 'I10C', '2.16.840.1.113883.6.90'];
    const dg1s = systems.map((s, i) => `DG1|${i + 1}||E11.${i}^Diabetes^${s}||20260101|F`);
    const ack = await sendOne(
      h.mllp.port,
      msg(
        'ORM^O01',
        pid('ORM1^^^HOSP^MR'),
        ...dg1s,
        'DG1|9||250.00^DM^I9C',
        'DG1|10||44054006^Diabetes^2.16.840.1.113883.6.96',
        'DG1|11||38341003^Hypertension^SCT',
      ),
    );
    expect(msa(ack)[1]).toBe('AA');
    const items = (await h.clinicalOf('HOSP|ORM1'))?.clinical?.items ?? {};
    for (let i = 0; i < systems.length; i++) {
      expect(items[`hl7:dg1:icd10cm:E11.${i}`]?.codings[0]?.system).toBe(
        'http://hl7.org/fhir/sid/icd-10-cm',
      );
    }
    expect(items['hl7:dg1:icd9cm:250.00']?.codings[0]?.system).toBe(
      'http://hl7.org/fhir/sid/icd-9-cm',
    );
    expect(items['hl7:dg1:snomed:44054006']?.codings[0]?.system).toBe('http://snomed.info/sct');
    expect(items['hl7:dg1:snomed:38341003']?.codings[0]?.system).toBe('http://snomed.info/sct');

    const ppr = await sendOne(
      h.mllp.port,
      msg(
        'PPR^PC1',
        pid('PPR1^^^HOSP^MR'),
        'PRB|AD|20260101|I10^Essential hypertension^ICD-10-CM|P-1||||||||||ACTIVE',
      ),
    );
    expect(msa(ppr)[1]).toBe('AA');
    const problem = (await h.clinicalOf('HOSP|PPR1'))?.clinical?.items['hl7:problem:P-1'];
    expect(problem?.codings[0]).toMatchObject({
      system: 'http://hl7.org/fhir/sid/icd-10-cm',
      code: 'I10',
    });
  });

  it('DG1 and PRB codes in a system we do not know (ICD-10-GM, a local one) are kept with that system', async () => {
    // Before, they were dropped: no condition, nothing counted unmapped, no CSV could map them.
    const ack = await sendOne(
      h.mllp.port,
      msg(
        'ADT^A08',
        pid('GM1^^^HOSP^MR'),
        'DG1|1||E11.90^Diabetes mellitus, Typ 2^icd10gm2023||20260101|F',
        'DG1|2||^^^PROB-77^Bluthochdruck^99KH',
        'DG1|3||K42.9^Hernia umbilicalis',
      ),
    );
    expect(msa(ack)[1]).toBe('AA');
    const items = (await h.clinicalOf('HOSP|GM1'))?.clinical?.items ?? {};
    expect(items['hl7:dg1:icd10gm2023:E11.90']).toMatchObject({
      kind: 'condition',
      codings: [{ system: 'icd10gm2023', code: 'E11.90' }],
    });
    expect(items['hl7:dg1:99KH:PROB-77']?.codings).toEqual([
      { system: '99KH', code: 'PROB-77', display: 'Bluthochdruck' },
    ]);
    // A code without any system names nothing a map could use: still not kept.
    expect(Object.keys(items).sort()).toEqual([
      'hl7:dg1:99KH:PROB-77',
      'hl7:dg1:icd10gm2023:E11.90',
    ]);

    const ppr = await sendOne(
      h.mllp.port,
      msg(
        'PPR^PC1',
        pid('PPR2^^^HOSP^MR'),
        'PRB|AD|20260101|I10.00^Essentielle Hypertonie^icd10gm2023|P-2||||||||||ACTIVE',
      ),
    );
    expect(msa(ppr)[1]).toBe('AA');
    const problem = (await h.clinicalOf('HOSP|PPR2'))?.clinical?.items['hl7:problem:P-2'];
    expect(problem?.codings[0]).toMatchObject({ system: 'icd10gm2023', code: 'I10.00' });
  });

  it('OML^O21, BAR^P05 and DFT^P03 DG1 segments become conditions too', async () => {
    for (const [type, id] of [
      ['OML^O21', 'OML1'],
      ['BAR^P05', 'BAR5'],
      ['DFT^P03', 'DFT3'],
    ] as const) {
      const ack = await sendOne(
        h.mllp.port,
        msg(type, pid(`${id}^^^HOSP^MR`), 'DG1|1||I50.9^Heart failure^I10'),
      );
      expect(msa(ack)[1]).toBe('AA');
      const items = (await h.clinicalOf(`HOSP|${id}`))?.clinical?.items ?? {};
      expect(items['hl7:dg1:icd10cm:I50.9']?.kind, type).toBe('condition');
    }
  });

  it('VXU^V04 RXA segments become immunizations; RXA-21 D removes one', async () => {
    const rxa = (date: string, cvx: string, action = 'A') =>
      `RXA|0|1|${date}|${date}|${cvx}^vaccine^CVX|0.5|mL||00^New^NIP001||||||LOT1||MSD^Merck^MVX|||CP|${action}`;
    const ack = await sendOne(
      h.mllp.port,
      msg('VXU^V04', pid('VXU1^^^HOSP^MR'), rxa('20250322', '03'), rxa('20250401', '141')),
    );
    expect(msa(ack)[1]).toBe('AA');
    const items = (await h.clinicalOf('HOSP|VXU1'))?.clinical?.items ?? {};
    expect(items['hl7:rxa:cvx:03:2025-03-22']).toMatchObject({
      kind: 'immunization',
      status: 'completed',
      codings: [{ system: 'http://hl7.org/fhir/sid/cvx', code: '03' }],
    });
    await sendOne(h.mllp.port, msg('VXU^V04', pid('VXU1^^^HOSP^MR'), rxa('20250322', '03', 'D')));
    const after = (await h.clinicalOf('HOSP|VXU1'))?.clinical?.items ?? {};
    expect(after['hl7:rxa:cvx:03:2025-03-22']).toBeUndefined();
    expect(after['hl7:rxa:cvx:141:2025-04-01']).toBeDefined();
  });

  it('an inbound ACK gets no answer (the next message on the connection gets its own), and is counted', async () => {
    const client = await MllpClient.open(h.mllp.port);
    const inbound = msg('ACK^A01', 'MSA|AA|SOMEONE-1');
    const next = msg('ADT^A08', pid('ACK1^^^HOSP^MR'));
    client.write(frame(inbound));
    client.write(frame(next));
    const acks = await client.waitForAcks(1);
    expect(acks).toHaveLength(1);
    expect(msa(acks[0])[2]).toBe(`IDC-${control}`);
    await client.end();
    expect(client.acks).toHaveLength(1);
    const metric = await h.registry.getSingleMetricAsString('cw_hl7v2_messages_total');
    expect(metric).toMatch(/type="ACK\^A01",outcome="ignored"} 1/);
    const logged = h.logs.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((e) => e.msg === 'hl7v2 message' && e.message_type === 'ACK^A01');
    expect(logged).toMatchObject({ outcome: 'ignored', ack: null });
  });

  it('an inbound ACK over HTTP is answered 204 without a body', async () => {
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: {
        authorization: 'Bearer hl7v2-test-token-0123456789',
        'content-type': 'text/plain',
      },
      payload: msg('ACK', 'MSA|AA|X'),
    });
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
  });

  it('any other type is AA and counted as ignored under its own type', async () => {
    const ack = await sendOne(h.mllp.port, msg('SIU^S12', pid('SIU1^^^HOSP^MR')));
    expect(msa(ack)[1]).toBe('AA');
    expect(await h.crosswalk.find('HOSP|SIU1')).toBeUndefined();
    const metric = await h.registry.getSingleMetricAsString('cw_hl7v2_messages_total');
    expect(metric).toMatch(/type="SIU\^S12",outcome="ignored"} 1/);
  });

  it('A23 and A29 delete the patient (record, presets, crosswalk) as the purge does, audited', async () => {
    for (const [trigger, id] of [
      ['A23', 'DEL23'],
      ['A29', 'DEL29'],
    ] as const) {
      await sendOne(
        h.mllp.port,
        msg('PPR^PC1', pid(`${id}^^^HOSP^MR`), 'PRB|AD|20260101|E11.9^DM^I10|P-9'),
      );
      const psid = await h.crosswalk.find(`HOSP|${id}`);
      expect(psid).toBeDefined();
      expect(await h.inspect.exists(`${h.prefix}:presets:${psid}`)).toBe(1);
      const ack = await sendOne(h.mllp.port, msg(`ADT^${trigger}`, pid(`${id}^^^HOSP^MR`)));
      expect(msa(ack)[1]).toBe('AA');
      expect(await h.crosswalk.find(`HOSP|${id}`)).toBeUndefined();
      expect(await h.records.get(psid ?? '')).toBeUndefined();
      expect(await h.inspect.exists(`${h.prefix}:presets:${psid}`)).toBe(0);
      // A resend: nothing left to delete, still AA.
      const again = await sendOne(h.mllp.port, msg(`ADT^${trigger}`, pid(`${id}^^^HOSP^MR`)));
      expect(msa(again)[1]).toBe('AA');
    }
    const audit = await h.admin.audit.list();
    expect(audit.filter((e) => e.action === 'purge' && e.actor === 'hl7v2:EHR')).toHaveLength(4);
  });

  describe('merges and identifier changes: the surviving id takes over, the retired id gets no further queries', () => {
    for (const trigger of ['A40', 'A18', 'A34', 'A47'] as const) {
      it(`ADT^${trigger}`, async () => {
        const prior = `OLD${trigger}`;
        const survivor = `NEW${trigger}`;
        await sendOne(
          h.mllp.port,
          msg('PPR^PC1', pid(`${prior}^^^HOSP^MR`), 'PRB|AD|20260101|E11.9^DM^I10|P-1'),
        );
        const priorPsid = await h.crosswalk.find(`HOSP|${prior}`);
        expect(priorPsid).toBeDefined();
        const dueBefore = (await dueQueries(h.inspect, h.prefix)).filter(
          (q) => q.patientServiceId === priorPsid,
        );
        const categories = dueBefore.map((q) => q.ccsrCategory).sort();
        expect(categories).toContain('END002');

        const ack = await sendOne(
          h.mllp.port,
          msg(`ADT^${trigger}`, pid(`${survivor}^^^HOSP^MR`), `MRG|${prior}^^^HOSP^MR`),
        );
        expect(msa(ack)[1]).toBe('AA');
        const survivorPsid = await h.crosswalk.find(`HOSP|${survivor}`);
        expect(survivorPsid).toBeDefined();
        expect(survivorPsid).not.toBe(priorPsid);
        expect(
          (await h.records.get(survivorPsid ?? ''))?.clinical?.items['hl7:problem:P-1'],
        ).toBeDefined();
        expect((await h.inspect.hkeys(`${h.prefix}:presets:${survivorPsid}`)).sort()).toEqual(
          categories,
        );
        expect(await h.inspect.exists(`${h.prefix}:presets:${priorPsid}`)).toBe(0);

        // A late message for the retired id (a system that still knows it) reaches the survivor.
        const late = await sendOne(
          h.mllp.port,
          msg('PPR^PC1', pid(`${prior}^^^HOSP^MR`), 'PRB|AD|20260102|I10^HTN^I10|P-2'),
        );
        expect(msa(late)[1]).toBe('AA');
        expect((await h.records.get(priorPsid ?? ''))?.clinical).toBeUndefined();
        expect(
          (await h.records.get(survivorPsid ?? ''))?.clinical?.items['hl7:problem:P-2'],
        ).toBeDefined();
        const due = await dueQueries(h.inspect, h.prefix);
        // The retired id: only the query opened before the merge (it ends ERR_RECORD_MISSING).
        expect(due.filter((q) => q.patientServiceId === priorPsid)).toEqual(dueBefore);
        expect(
          due
            .filter((q) => q.patientServiceId === survivorPsid)
            .map((q) => q.ccsrCategory)
            .sort(),
        ).toEqual([...new Set([...categories, 'CIR007'])].sort());

        // A resend of the merge changes nothing.
        const resend = await sendOne(
          h.mllp.port,
          msg(`ADT^${trigger}`, pid(`${survivor}^^^HOSP^MR`), `MRG|${prior}^^^HOSP^MR`),
        );
        expect(msa(resend)[1]).toBe('AA');
        expect(await h.crosswalk.findCurrent(`HOSP|${prior}`)).toBe(survivorPsid);
      });
    }
  });
});
