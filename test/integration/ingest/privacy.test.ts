import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AUTH,
  JSON_AUTH,
  TOKEN,
  dumpRedis,
  startHarness,
  type Harness,
} from './support/ingest-harness.ts';
import { samplePatient } from '../../support/sample-patient.ts';

/** Stand-ins for a hospital's patient id and for record content. */
const MARKER = 'PLANTED-MRN-77';
const RECORD_MARKER = 'PLANTED-RECORD-TEXT-31';

const record = {
  ...samplePatient,
  nodes: samplePatient.nodes.map((node) => ({ ...node, service_preferred_name: RECORD_MARKER })),
};

let h: Harness;
beforeEach(async () => {
  h = await startHarness({ rules: [{ ccsr_category: 'CIR007' }] });
});
afterEach(() => h.close());

const inject = (method: 'GET' | 'PUT' | 'DELETE' | 'POST', url: string, payload?: unknown) =>
  h.app.inject({
    method,
    url,
    headers: payload === undefined ? AUTH : JSON_AUTH,
    ...(payload === undefined
      ? {}
      : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
  });

describe('privacy of the local patient id, record content and tokens', () => {
  it('keeps them out of every log line and out of Redis in the clear', async () => {
    const presets = `/v1/patients/${MARKER}/presets`;
    const statuses = [
      (await inject('PUT', `${presets}/END002`)).statusCode,
      (await inject('PUT', `${presets}/END002`)).statusCode,
      (await inject('PUT', `${presets}/XXX000`)).statusCode,
      (await inject('GET', presets)).statusCode,
      (
        await inject('POST', '/v1/record-updates', {
          patient_id: MARKER,
          event_id: 'evt-privacy',
          source: 'mirth',
          assembled_patient: record,
          ccsr_categories: ['END005'],
        })
      ).statusCode,
      (await inject('POST', '/v1/record-updates', { patient_id: MARKER, event_id: 'evt-privacy' }))
        .statusCode,
      (
        await inject('POST', '/v1/record-updates', {
          patient_id: MARKER,
          ccsr_categories: ['Nope'],
        })
      ).statusCode,
      (await inject('POST', '/v1/record-updates', { patient_id: `${MARKER}-NEW` })).statusCode,
      (
        await inject(
          'POST',
          '/v1/record-updates',
          `{"patient_id": "${MARKER}", "x": ${RECORD_MARKER}`,
        )
      ).statusCode,
      (await inject('DELETE', `${presets}/END002`)).statusCode,
      (await inject('DELETE', `${presets}/END002`)).statusCode,
      (await inject('GET', `/v1/patients/${MARKER}-UNKNOWN/presets`)).statusCode,
      (await inject('GET', `/v1/unknown/${MARKER}`)).statusCode,
      (await h.app.inject({ method: 'GET', url: presets })).statusCode,
    ];
    expect(statuses).toEqual([
      201, 200, 422, 200, 202, 200, 422, 422, 400, 204, 404, 404, 404, 401,
    ]);

    // Redis as any reader of it sees it: keys, and every value of every type (the due set included).
    const dump = await dumpRedis(h.inspect, h.prefix);
    expect(dump.size).toBeGreaterThan(5);
    expect(dump.has(`${h.prefix}:qdue`)).toBe(true);
    for (const [key, value] of dump) {
      for (const secret of [MARKER, RECORD_MARKER]) {
        expect(key).not.toContain(secret);
        expect(value, key).not.toContain(secret);
      }
    }

    // The connection fails last, so that 503 lines are in the log too.
    h.redis.disconnect();
    expect((await inject('GET', presets)).statusCode).toBe(503);

    expect(h.logLines.length).toBeGreaterThanOrEqual(statuses.length + 1);
    const routes = h.logLines.map((line) => (JSON.parse(line) as { route?: string }).route);
    expect(routes).toContain('/v1/patients/:patient_id/presets/:ccsr_category');
    expect(routes).toContain('/v1/record-updates');
    for (const line of h.logLines) {
      expect(line).not.toContain(MARKER);
      expect(line).not.toContain(RECORD_MARKER);
      expect(line).not.toContain(TOKEN);
    }
  });

  it('keeps them out of logs and Redis on the batch route too (JSON array and NDJSON)', async () => {
    const send = (payload: string, type: string) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/record-updates/batch',
        headers: { ...AUTH, 'content-type': type },
        payload,
      });
    const item = (n: number, extra: object = {}) => ({
      patient_id: `${MARKER}-${n}`,
      event_id: `evt-batch-${n}`,
      source: 'mirth',
      assembled_patient: record,
      ...extra,
    });
    const answers: string[] = [];
    const batch = async (payload: string, type = 'application/json') => {
      const res = await send(payload, type);
      answers.push(res.body);
      return res;
    };
    const statuses = [
      (await batch(JSON.stringify([item(1), item(2)]))).statusCode,
      // A replay: duplicates.
      (await batch(JSON.stringify([item(1), item(2)]))).statusCode,
      (
        await batch(
          [JSON.stringify(item(3)), JSON.stringify(item(4, { ccsr_categories: ['END005'] }))].join(
            '\n',
          ),
          'application/x-ndjson',
        )
      ).statusCode,
      // Refused whole: markers as values of bad fields, an unknown patient without a record.
      (
        await batch(
          JSON.stringify([
            item(5),
            { patient_id: MARKER, occurred_at: RECORD_MARKER },
            { patient_id: `${MARKER}-6`, ccsr_categories: [RECORD_MARKER] },
          ]),
        )
      ).statusCode,
      (await batch(JSON.stringify([{ patient_id: `${MARKER}-UNSEEN` }]))).statusCode,
      // A malformed NDJSON line holding both markers; malformed JSON.
      (
        await batch(
          `${JSON.stringify(item(7))}\n{"patient_id": "${MARKER}", ${RECORD_MARKER}`,
          'application/x-ndjson',
        )
      ).statusCode,
      (await batch(`[{"patient_id": "${MARKER}", "x": ${RECORD_MARKER}`)).statusCode,
      (await batch(`${MARKER} ${RECORD_MARKER}`, 'text/plain')).statusCode,
    ];
    expect(statuses).toEqual([202, 202, 202, 422, 422, 422, 400, 415]);
    // The answers name items by index and field, never by a value sent.
    for (const answer of answers) {
      expect(answer).not.toContain(MARKER);
      expect(answer).not.toContain(RECORD_MARKER);
    }

    const dump = await dumpRedis(h.inspect, h.prefix);
    expect(dump.size).toBeGreaterThan(5);
    for (const [key, value] of dump) {
      for (const secret of [MARKER, RECORD_MARKER]) {
        expect(key).not.toContain(secret);
        expect(value, key).not.toContain(secret);
      }
    }
    const routes = h.logLines.map((line) => (JSON.parse(line) as { route?: string }).route);
    expect(routes.filter((route) => route === '/v1/record-updates/batch')).toHaveLength(
      statuses.length,
    );
    for (const line of h.logLines) {
      expect(line).not.toContain(MARKER);
      expect(line).not.toContain(RECORD_MARKER);
      expect(line).not.toContain(TOKEN);
    }
  });
});
