import { afterEach, describe, expect, it } from 'vitest';
import {
  frame,
  MllpClient,
  segmentOf,
  sendOne,
  startHl7v2Harness,
  TOKEN,
  type Hl7v2Harness,
} from './support/hl7v2-harness.ts';

const PLANTED = {
  family: 'Zyxwvutsky',
  given: 'Quentinella',
  mrn: 'MRN8675309Q',
  ssn: '987-65-4329',
  birth: '19471103',
  phone: '(555)013-4477',
  street: '742 Evergreen Terrace',
  city: 'Springfieldia',
};

function plantedMessage(controlId: string, typeCode = 'MR'): string {
  const p = PLANTED;
  return [
    `MSH|^~\\&|LAB|HOSP|CW|CW|20260101120000||ADT^A08^ADT_A01|${controlId}|P|2.5.1`,
    `PID|1||${p.mrn}^^^HOSP^${typeCode}||${p.family}^${p.given}||${p.birth}|F|||${p.street}^^${p.city}^ST^12345||${p.phone}||||||${p.ssn}`,
    'DG1|1||E11.9^Type 2 diabetes mellitus without complications^I10',
  ].join('\r');
}

let h: Hl7v2Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function expectNoneLogged(lines: string[]) {
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) {
    for (const value of [
      ...Object.values(PLANTED),
      PLANTED.ssn.replaceAll('-', ''),
      '1947-11-03',
    ]) {
      expect(line).not.toContain(value);
    }
  }
}

describe('no PID content reaches the logs', () => {
  it('accepted, rejected and garbage messages, over MLLP and HTTP', async () => {
    // Rules that accept only MR, so that a PI id is an AE.
    h = await startHl7v2Harness({
      hl7v2: {
        patient_id: {
          rules: [{ type_codes: ['MR'] }],
          fallback_fields: [],
          unqualified_authorities: [],
        },
      },
    });
    expect(segmentOf((await sendOne(h.mllp.port, plantedMessage('C1'))) ?? '', 'MSA')[1]).toBe(
      'AA',
    );
    expect(
      segmentOf((await sendOne(h.mllp.port, plantedMessage('C2', 'PI'))) ?? '', 'MSA')[1],
    ).toBe('AE');
    const broken = plantedMessage('C3').replace('\rDG1', `\r${PLANTED.family}|x\rDG1`);
    expect(segmentOf((await sendOne(h.mllp.port, broken)) ?? '', 'MSA')[1]).toBe('AE');
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      payload: plantedMessage('C4'),
    });
    expect(response.statusCode).toBe(200);
    // The record did keep them (encrypted at rest): the test plants what it thinks it does.
    const clinical = (await h.clinicalOf(`HOSP|${PLANTED.mrn}`))?.clinical;
    expect(clinical?.patient.names.join(' ')).toContain(PLANTED.family);
    expect(clinical?.items['hl7:dg1:icd10cm:E11.9']?.kind).toBe('condition');

    const entries = h.logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.filter((e) => e.msg === 'hl7v2 message').map((e) => e.outcome)).toEqual([
      'accepted',
      'rejected',
      'rejected',
      'accepted',
    ]);
    expectNoneLogged(h.logs.lines);
  });

  it('a transient failure', async () => {
    h = await startHl7v2Harness({ redisDown: true });
    const client = await MllpClient.open(h.mllp.port);
    client.write(frame(plantedMessage('C5')));
    await client.closedPromise;
    expectNoneLogged(h.logs.lines);
  });
});
