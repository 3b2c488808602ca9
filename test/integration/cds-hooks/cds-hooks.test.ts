import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BASE_URL,
  concordanceEvent,
  ehrKey,
  LOCAL_ISSUER,
  patientView,
  REMOTE_ISSUER,
  signJwt,
  startCdsHarness,
  type CdsHarness,
} from './support/cds-harness.ts';

const schema = JSON.parse(
  readFileSync(
    new URL('../../fixtures/cds-hooks/cds-hooks-2.0.schema.json', import.meta.url),
    'utf8',
  ),
) as object;
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
ajv.addSchema(schema);
const valid = (def: string, data: unknown) => {
  const validate = ajv.getSchema(`${(schema as { $id: string }).$id}#/$defs/${def}`);
  if (validate === undefined) throw new Error(`no ${def}`);
  return validate(data) ? [] : validate.errors;
};

const SERVICE = 'concordance-results';
const SERVICE_URL = `${BASE_URL}/cds-services/${SERVICE}`;

let harness: CdsHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function call(
  h: CdsHarness,
  token: string | undefined,
  body: unknown,
  path = `/cds-services/${SERVICE}`,
) {
  const response = await fetch(`${h.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

const localId = (name: string) => `pat-${name}-${randomUUID().slice(0, 8)}`;

describe('the CDS Hooks service', () => {
  it('answers discovery without a token, in the specification’s shape', async () => {
    harness = await startCdsHarness();
    const response = await fetch(`${harness.url}/cds-services`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { services: { id: string; prefetch: unknown }[] };
    expect(valid('discoveryResponse', body)).toEqual([]);
    expect(body.services).toEqual([
      expect.objectContaining({
        hook: 'patient-view',
        id: SERVICE,
        prefetch: { patient: 'Patient/{{context.patientId}}' },
      }),
    ]);
  });

  it('shows each patient only its own kept results (planted markers), in the specification’s shape', async () => {
    const h = (harness = await startCdsHarness());
    const [a, b] = [localId('a'), localId('b')];
    const [psidA, psidB] = [await h.patient(a), await h.patient(b)];
    const [markA, markB] = [`MARKER-A-${randomUUID()}`, `MARKER-B-${randomUUID()}`];
    await h.router.deliverMany([
      concordanceEvent(psidA, 'END002', markA),
      concordanceEvent(psidA, 'CIR007', markA, 'concordant'),
      concordanceEvent(psidB, 'END002', markB),
    ]);
    const answerA = await call(
      h,
      await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL),
      patientView(a),
    );
    expect(answerA.status).toBe(200);
    const cardsA = JSON.parse(answerA.text) as { cards: { indicator: string; summary: string }[] };
    expect(valid('serviceResponse', cardsA)).toEqual([]);
    expect(cardsA.cards).toHaveLength(2);
    expect(cardsA.cards.map((c) => c.indicator).sort()).toEqual(['info', 'warning']);
    expect(answerA.text).toContain(markA);
    expect(answerA.text).not.toContain(markB);
    expect(answerA.text).not.toContain(a);
    expect(answerA.text).not.toContain(psidA);

    // The remote issuer: its keys come from its JWKS URL.
    const answerB = await call(
      h,
      await signJwt(h.remoteKey, REMOTE_ISSUER, SERVICE_URL),
      patientView(b),
    );
    expect(answerB.status).toBe(200);
    expect(answerB.text).toContain(markB);
    expect(answerB.text).not.toContain(markA);

    // Nothing in Redis holds a marker in plain text.
    const keys = await h.inspect.keys(`${h.prefix}*cds*`);
    for (const key of keys) {
      const type = await h.inspect.type(key);
      const dump = type === 'hash' ? JSON.stringify(await h.inspect.hgetall(key)) : '';
      expect(dump).not.toContain(markA);
      expect(dump).not.toContain(markB);
    }

    const unknown = await call(
      h,
      await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL),
      patientView('never-seen'),
    );
    expect(unknown).toEqual({ status: 200, text: '{"cards":[]}' });
  });

  it('refuses a missing, badly signed, mis-addressed, expired, replayed or unknown-issuer JWT with 401 and no data', async () => {
    const h = (harness = await startCdsHarness());
    const a = localId('a');
    const marker = `MARKER-${randomUUID()}`;
    await h.router.deliver(concordanceEvent(await h.patient(a), 'END002', marker));
    const now = Math.floor(Date.now() / 1_000);
    const forged = await ehrKey(h.localKey.kid);
    const replayed = await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL);
    expect((await call(h, replayed, patientView(a))).status).toBe(200);
    const cases: [string, string | undefined][] = [
      ['ERR_CDS_TOKEN_MISSING', undefined],
      ['ERR_CDS_TOKEN_INVALID', 'not.a.jwt'],
      ['ERR_CDS_TOKEN_INVALID', await signJwt(forged, LOCAL_ISSUER, SERVICE_URL)],
      [
        'ERR_CDS_TOKEN_AUDIENCE',
        await signJwt(h.localKey, LOCAL_ISSUER, `${BASE_URL}/cds-services/other`),
      ],
      [
        'ERR_CDS_TOKEN_EXPIRED',
        await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL, { iat: now - 100, exp: now - 60 }),
      ],
      [
        'ERR_CDS_TOKEN_EXPIRED',
        await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL, { iat: now - 3_600, exp: now + 60 }),
      ],
      ['ERR_CDS_TOKEN_REPLAYED', replayed],
      [
        'ERR_CDS_TOKEN_ISSUER',
        await signJwt(h.localKey, 'https://stranger.example.test', SERVICE_URL),
      ],
    ];
    for (const [code, token] of cases) {
      const answer = await call(h, token, patientView(a));
      expect({ code, ...answer }).toEqual({
        code,
        status: 401,
        text: JSON.stringify({ detail: code }),
      });
    }
    // The feedback route too.
    const feedback = await call(
      h,
      undefined,
      { feedback: [] },
      `/cds-services/${SERVICE}/feedback`,
    );
    expect(feedback.status).toBe(401);
  });

  it('hides concordant categories when asked to', async () => {
    const h = (harness = await startCdsHarness({ hide_concordant: true }));
    const a = localId('a');
    const psid = await h.patient(a);
    await h.router.deliverMany([
      concordanceEvent(psid, 'END002', 'disc', 'discordant'),
      concordanceEvent(psid, 'CIR007', 'conc', 'concordant'),
    ]);
    const answer = await call(
      h,
      await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL),
      patientView(a),
    );
    const body = JSON.parse(answer.text) as { cards: { source: { topic?: { code: string } } }[] };
    expect(body.cards.map((c) => c.source.topic?.code)).toEqual(['END002']);
  });

  it('keeps a newer result over an older retry delivered after it, and suppressed results too', async () => {
    const h = (harness = await startCdsHarness());
    const a = localId('a');
    const psid = await h.patient(a);
    await h.router.deliver(
      concordanceEvent(psid, 'END002', 'NEWER', 'discordant', { record_version: 7 }),
    );
    await h.router.deliver(
      concordanceEvent(psid, 'END002', 'OLDER', 'discordant', { record_version: 6 }),
    );
    const answer = await call(
      h,
      await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL),
      patientView(a),
    );
    expect(answer.text).toContain('NEWER');
    expect(answer.text).not.toContain('OLDER');
  });

  it('loses the kept results on purge and on opt-out', async () => {
    const h = (harness = await startCdsHarness());
    const [a, b] = [localId('a'), localId('b')];
    const [psidA, psidB] = [await h.patient(a), await h.patient(b)];
    await h.router.deliverMany([
      concordanceEvent(psidA, 'END002', 'PURGED'),
      concordanceEvent(psidB, 'END002', 'OPTED'),
    ]);
    const cards = async (id: string) =>
      (
        JSON.parse(
          (await call(h, await signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL), patientView(id)))
            .text,
        ) as {
          cards: unknown[];
        }
      ).cards;
    expect(await cards(a)).toHaveLength(1);
    expect(await cards(b)).toHaveLength(1);
    const purge = await h.admin.purge(a, { actor: 'admin-token#0' });
    expect(purge.counts.cds_results).toBe(1);
    await h.admin.optOut(b, { actor: 'admin-token#0' });
    expect(await cards(a)).toEqual([]);
    expect(await cards(b)).toEqual([]);
    expect(await h.inspect.keys(`${h.prefix}*:cds:${psidA}`)).toEqual([]);
    expect(await h.inspect.keys(`${h.prefix}*:cds:${psidB}`)).toEqual([]);
  });

  it('counts feedback per outcome, and its body validates against the specification', async () => {
    const h = (harness = await startCdsHarness());
    const body = {
      feedback: [
        {
          card: randomUUID(),
          outcome: 'accepted',
          acceptedSuggestions: [{ id: 'x' }],
          outcomeTimestamp: '2026-01-01T00:00:00Z',
        },
        { card: randomUUID(), outcome: 'overridden', outcomeTimestamp: '2026-01-01T00:00:00Z' },
        { card: randomUUID(), outcome: 'overridden', outcomeTimestamp: '2026-01-01T00:00:00Z' },
      ],
    };
    expect(valid('feedbackRequest', body)).toEqual([]);
    const answer = await call(
      h,
      await signJwt(h.localKey, LOCAL_ISSUER, `${SERVICE_URL}/feedback`),
      body,
      `/cds-services/${SERVICE}/feedback`,
    );
    expect(answer.status).toBe(200);
    const metrics = await h.registry.getSingleMetricAsString('cw_cds_feedback_total');
    expect(metrics).toContain(`cw_cds_feedback_total{service="${SERVICE}",outcome="accepted"} 1`);
    expect(metrics).toContain(`cw_cds_feedback_total{service="${SERVICE}",outcome="overridden"} 2`);
    const calls = await h.registry.getSingleMetricAsString('cw_cds_calls_total');
    expect(calls).toContain('cw_cds_calls_total');
  });

  it('resolves the patient by identifier from prefetch when the identity settings say so', async () => {
    const system = 'urn:oid:1.2.3.4.5';
    const h = (harness = await startCdsHarness({}, (c) => ({
      ...c,
      fhir: { ...c.fhir, patient_identifier_system: system },
    })));
    const mrn = `MRN-${randomUUID()}`;
    await h.router.deliver(concordanceEvent(await h.patient(mrn), 'END002', 'BY-MRN'));
    const token = () => signJwt(h.localKey, LOCAL_ISSUER, SERVICE_URL);
    const prefetch = (id: string) => ({
      prefetch: { patient: { resourceType: 'Patient', id, identifier: [{ system, value: mrn }] } },
    });
    const answer = await call(h, await token(), patientView('fhir-1', prefetch('fhir-1')));
    expect(answer.text).toContain('BY-MRN');
    // A prefetched Patient of another id than the one in context is never used.
    const other = await call(h, await token(), patientView('fhir-2', prefetch('fhir-1')));
    expect(other.status).toBe(412);
    expect(other.text).not.toContain('BY-MRN');
  });
});
