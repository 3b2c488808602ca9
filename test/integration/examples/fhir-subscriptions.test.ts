import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import {
  FHIR_MEDIA_TYPES,
  FHIR_NOTIFICATIONS_ROUTE,
} from '../../../src/ingest/fhir/fhir-routes.ts';
import { MAPPED_TYPES } from '../../../src/ingest/fhir/map-resource.ts';
import { REST_HOOK_ROUTE } from '../../../src/ingest/fhir/rest-hook-routes.ts';
import { dueQueries } from '../../support/ingest-stack.ts';
import { TOKEN, startFhirHarness, type FhirHarness } from '../fhir/support/fhir-harness.ts';
import { condition } from '../fhir/support/notifications.ts';
import {
  SUBSCRIPTIONS_DIR,
  backportNotification,
  classicDelivery,
  example,
  installed,
  placeholdersIn,
  r5Notification,
  topicDelivery,
  type Delivery,
  type Notify,
} from './support/fhir-examples.ts';
import {
  R5_BUNDLE,
  R5_SUBSCRIPTION,
  R5_SUBSCRIPTION_STATUS,
  R5_SUBSCRIPTION_TOPIC,
  r4Problems,
  r5Problems,
} from './support/fhir-shapes.ts';

type Json = Record<string, unknown>;

const PLACEHOLDERS = {
  CW_INGEST_BASE_URL: 'https://cw.hospital.example:8080',
  INGEST_TOKEN: TOKEN,
};
const BACKPORT = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition/';
const XVER = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-SubscriptionTopic.';
const PAYLOAD_CONTENTS = ['empty', 'id-only', 'full-resource'];
/** The payload contents the notification route turns into record updates (README). */
const CONTENTS_APPLIED = ['id-only', 'full-resource'];

const REST_HOOKS_FILE = fileURLToPath(new URL('r4-classic/rest-hooks.yaml', SUBSCRIPTIONS_DIR));
const restHooks = loadConfig({ file: REST_HOOKS_FILE, env: {} }).fhir.rest_hooks;

const classic = {
  problems: example('r4-classic/subscription-problems.json'),
  patients: example('r4-classic/subscription-patients.json'),
};
const backport = example('r4-backport/subscription.json');
const backportTopic = example('r4-backport/topic-basic.json');
const r5 = example('r5/subscription.json');
const r5Topic = example('r5/subscription-topic.json');

const obj = (v: unknown): Json => (v ?? {}) as Json;
const list = (v: unknown): Json[] => (v as Json[] | undefined) ?? [];
const ext = (holder: unknown, url: string): Json[] =>
  list(obj(holder).extension).filter((x) => x.url === url);
const typeOf = (resource: string) =>
  resource.replace('http://hl7.org/fhir/StructureDefinition/', '');

/** The endpoint path an example posts to, once installed. */
function endpointPath(endpoint: unknown): string {
  const url = new URL(String(endpoint));
  expect(url.origin).toBe(new URL(PLACEHOLDERS.CW_INGEST_BASE_URL).origin);
  return url.pathname;
}

/** The R4 Basic-wrapped topic as R5 fields (the cross-version extensions of the backport IG). */
function basicTopic() {
  const sub = (holder: Json, name: string) =>
    ext(holder, name).map((x) => x[Object.keys(x)[1] as string]);
  return {
    url: ext(backportTopic, `${XVER}url`)[0]?.valueUri,
    triggers: ext(backportTopic, `${XVER}resourceTrigger`).map((t) =>
      typeOf(String(sub(t, 'resource')[0])),
    ),
    filters: ext(backportTopic, `${XVER}canFilterBy`).map(
      (f) => `${String(sub(f, 'resource')[0])}?${String(sub(f, 'filterParameter')[0])}`,
    ),
  };
}

describe('the Subscription examples are FHIR of their version', () => {
  it('hold no value but the two placeholders an installer fills', () => {
    for (const s of [classic.problems, classic.patients, backport, r5]) {
      expect(new Set(placeholdersIn(s))).toEqual(new Set(['CW_INGEST_BASE_URL', 'INGEST_TOKEN']));
    }
    for (const t of [backportTopic, r5Topic]) expect(placeholdersIn(t)).toEqual([]);
  });

  it('classic R4: valid R4 Subscriptions, one per rest-hook of the config snippet, on the rest-hook route', () => {
    expect(restHooks.map((hook) => hook.name).sort()).toEqual(Object.keys(classic).sort());
    for (const [name, raw] of Object.entries(classic)) {
      const s = installed(raw, PLACEHOLDERS);
      expect(r4Problems(s)).toEqual([]);
      // R4 cardinalities the schema leaves to the primitives' extensions: status, reason, criteria.
      expect(s).toMatchObject({ status: 'requested', reason: expect.any(String) });
      const channel = obj(s.channel);
      expect(channel.type).toBe('rest-hook');
      expect(endpointPath(channel.endpoint)).toBe(`${REST_HOOK_ROUTE}/${name}`);
      expect(s.criteria).toBe(restHooks.find((hook) => hook.name === name)?.criteria);
      expect(FHIR_MEDIA_TYPES.has(String(channel.payload))).toBe(true);
      expect(raw.channel).toMatchObject({ header: ['Authorization: Bearer ${INGEST_TOKEN}'] });
    }
  });

  it('R4 backport: a valid R4 Subscription of the backport profile, topic and filter as its Basic topic offers', () => {
    const s = installed(backport, PLACEHOLDERS);
    expect(r4Problems(s)).toEqual([]);
    expect(obj(s.meta).profile).toEqual([`${BACKPORT}backport-subscription`]);
    expect(s).toMatchObject({ status: 'requested', reason: expect.any(String) });
    const topic = basicTopic();
    expect(s.criteria).toBe(topic.url);
    const filters = ext(s._criteria, `${BACKPORT}backport-filter-criteria`).map((f) =>
      String(f.valueString).replace(/=.*$/, ''),
    );
    expect(filters.length).toBeGreaterThan(0);
    for (const f of filters) expect(topic.filters).toContain(f);
    const channel = obj(s.channel);
    expect(channel.type).toBe('rest-hook');
    expect(endpointPath(channel.endpoint)).toBe(FHIR_NOTIFICATIONS_ROUTE);
    expect(FHIR_MEDIA_TYPES.has(String(channel.payload))).toBe(true);
    const content = ext(channel._payload, `${BACKPORT}backport-payload-content`);
    expect(content).toHaveLength(1);
    expect(CONTENTS_APPLIED).toContain(content[0]?.valueCode);
    expect(
      ext(channel, `${BACKPORT}backport-heartbeat-period`)[0]?.valueUnsignedInt,
    ).toBeGreaterThan(0);
    expect(backport.channel).toMatchObject({ header: ['Authorization: Bearer ${INGEST_TOKEN}'] });
  });

  it('R4 backport topic: a valid R4 Basic of code SubscriptionTopic, triggered only by types the ingester maps', () => {
    expect(r4Problems(backportTopic)).toEqual([]);
    expect(obj(backportTopic.code).coding).toEqual([
      { system: 'http://hl7.org/fhir/fhir-types', code: 'SubscriptionTopic' },
    ]);
    expect(list(backportTopic.modifierExtension)).toEqual([
      { url: `${XVER}status`, valueCode: 'active' },
    ]);
    const { triggers } = basicTopic();
    expect(triggers.length).toBeGreaterThan(0);
    for (const type of triggers) expect(MAPPED_TYPES.has(type)).toBe(true);
  });

  it('R5: a Subscription and its SubscriptionTopic of the R5 element tables', () => {
    const s = installed(r5, PLACEHOLDERS);
    expect(r5Problems(s, R5_SUBSCRIPTION)).toEqual([]);
    expect(r5Problems(r5Topic, R5_SUBSCRIPTION_TOPIC)).toEqual([]);
    expect(s.topic).toBe(r5Topic.url);
    expect(s.channelType).toEqual({
      system: 'http://terminology.hl7.org/CodeSystem/subscription-channel-type',
      code: 'rest-hook',
    });
    expect(endpointPath(s.endpoint)).toBe(FHIR_NOTIFICATIONS_ROUTE);
    expect(FHIR_MEDIA_TYPES.has(String(s.contentType))).toBe(true);
    expect(PAYLOAD_CONTENTS).toContain(s.content);
    expect(CONTENTS_APPLIED).toContain(s.content);
    expect(r5.parameter).toEqual([{ name: 'Authorization', value: 'Bearer ${INGEST_TOKEN}' }]);
    const offered = list(r5Topic.canFilterBy).map(
      (f) => `${String(f.resource)}?${String(f.filterParameter)}`,
    );
    for (const f of list(s.filterBy)) {
      expect(offered).toContain(`${String(f.resourceType)}?${String(f.filterParameter)}`);
    }
    for (const t of list(r5Topic.resourceTrigger)) {
      expect(MAPPED_TYPES.has(typeOf(String(t.resource)))).toBe(true);
    }
  });

  it('the R4 and R5 topics say the same', () => {
    const topic = basicTopic();
    expect(topic.url).toBe(r5Topic.url);
    expect(topic.triggers).toEqual(
      list(r5Topic.resourceTrigger).map((t) => typeOf(String(t.resource))),
    );
    expect(topic.filters).toEqual(
      list(r5Topic.canFilterBy).map((f) => `${String(f.resource)}?${String(f.filterParameter)}`),
    );
  });
});

// ---- what each would produce, into the real ingest app ------------------------------------------

let h: FhirHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function harness(): FhirHarness {
  if (h === undefined) throw new Error('no harness started');
  return h;
}

const PATIENT_ID = 'pt-examples-1';
const patient = (lastUpdated?: string) => ({
  resourceType: 'Patient',
  id: PATIENT_ID,
  ...(lastUpdated === undefined ? {} : { meta: { lastUpdated } }),
  gender: 'female',
  birthDate: '1961-04-12',
});
/** A problem-list Condition coded in ICD-10-CM E11.9: its preset is CCSR END002. */
const problem = (lastUpdated?: string) =>
  condition(
    'cond-examples-1',
    PATIENT_ID,
    lastUpdated === undefined ? {} : { meta: { lastUpdated } },
  );

function deliver(d: Delivery) {
  const url = new URL(d.url);
  return harness().app.inject({
    method: d.method,
    url: `${url.pathname}${url.search}`,
    headers: d.headers,
    payload: d.body,
  });
}

/** The record update and the query it opens, as the README documents them. */
async function expectRecordAndQuery(): Promise<void> {
  const psid = await harness().crosswalk.find(PATIENT_ID);
  expect(psid).toBeDefined();
  const clinical = (await harness().records.get(psid ?? ''))?.clinical;
  expect(clinical?.items['fhir:Condition/cond-examples-1']).toMatchObject({
    kind: 'condition',
    problemList: true,
    status: 'active',
  });
  expect(clinical?.patient.birthDate).toBe('1961-04-12');
  const due = (await dueQueries(harness().inspect, harness().prefix)).filter(
    (q) => q.patientServiceId === psid,
  );
  expect(due.map((q) => q.ccsrCategory)).toContain('END002');
}

async function expectNoRecord(): Promise<void> {
  expect(await harness().crosswalk.find(PATIENT_ID)).toBeUndefined();
}

describe('classic R4: the deliveries of the two Subscriptions', () => {
  const subs = {
    problems: installed(classic.problems, PLACEHOLDERS),
    patients: installed(classic.patients, PLACEHOLDERS),
  };

  it('payload application/fhir+json: PUT <endpoint>/<Type>/<id> of the Patient and the Condition', async () => {
    h = await startFhirHarness({ restHooks });
    const put = [
      classicDelivery(subs.patients, { resource: patient() }),
      classicDelivery(subs.problems, { resource: problem() }),
    ];
    for (const d of put) expect((await deliver(d)).statusCode).toBe(200);
    await expectRecordAndQuery();
  });

  it('a Patient deleted on the server: DELETE <endpoint>/Patient/<id> purges the patient', async () => {
    h = await startFhirHarness({ restHooks });
    await deliver(classicDelivery(subs.patients, { resource: patient() }));
    await deliver(classicDelivery(subs.problems, { resource: problem() }));
    const res = await deliver(classicDelivery(subs.patients, { deleted: patient() }));
    expect(res.statusCode).toBe(204);
    await expectNoRecord();
  });

  it('without payload: the empty POST (a ping) makes the ingester read the criteria from FHIR_BASE_URL', async () => {
    h = await startFhirHarness({ restHooks });
    const now = new Date().toISOString();
    harness().fhir.put(problem(now));
    harness().fhir.put(patient(now));
    const { payload: _payload, ...channel } = obj(subs.problems.channel);
    const ping = classicDelivery({ ...subs.problems, channel }, 'ping');
    const res = await deliver(ping);
    expect({ status: res.statusCode, body: res.statusCode === 200 ? '' : res.body }).toEqual({
      status: 200,
      body: '',
    });
    expect(
      harness()
        .fhir.calls('Condition')
        .map((c) => c.query.category),
    ).toEqual(['problem-list-item']);
    await expectRecordAndQuery();
  });
});

const BASE = 'https://fhir.hospital.example/fhir';

describe('R4 backport: the notifications of the Subscription (history Bundle, Parameters status)', () => {
  const sub = installed(backport, PLACEHOLDERS);
  const notify = (n: Omit<Notify, 'base' | 'subscriptionId'>) => {
    const bundle = backportNotification(sub, { base: BASE, subscriptionId: 'cw-backport', ...n });
    expect(r4Problems(bundle)).toEqual([]);
    return deliver(topicDelivery(sub, bundle));
  };

  it('handshake, then an event with the Condition and its Patient (full-resource), then a heartbeat', async () => {
    h = await startFhirHarness();
    expect((await notify({ type: 'handshake', eventsSince: 0 })).statusCode).toBe(200);
    await expectNoRecord();
    const event = { n: 1, focus: problem(), context: [patient()] };
    const res = await notify({ type: 'event-notification', eventsSince: 1, events: [event] });
    expect(res.statusCode).toBe(200);
    await expectRecordAndQuery();
    expect((await notify({ type: 'heartbeat', eventsSince: 1 })).statusCode).toBe(200);
    // full-resource: nothing to read from the FHIR server.
    expect(harness().fhir.seen).toEqual([]);
  });
});

describe('R5: the notifications of the Subscription (subscription-notification Bundle, SubscriptionStatus)', () => {
  const sub = installed(r5, PLACEHOLDERS);
  const notify = (n: Omit<Notify, 'base' | 'subscriptionId'>) => {
    const bundle = r5Notification(sub, { base: BASE, subscriptionId: 'cw-r5', ...n });
    expect(r5Problems(bundle, R5_BUNDLE)).toEqual([]);
    expect(r5Problems(list(bundle.entry)[0]?.resource as Json, R5_SUBSCRIPTION_STATUS)).toEqual([]);
    return deliver(topicDelivery(sub, bundle));
  };

  it('handshake, then an id-only event (read from FHIR_BASE_URL), then a heartbeat', async () => {
    h = await startFhirHarness();
    harness().fhir.put(problem());
    harness().fhir.put(patient());
    const answers: { status: number; body: string }[] = [];
    const send = async (n: Omit<Notify, 'base' | 'subscriptionId'>) => {
      const res = await notify(n);
      answers.push({ status: res.statusCode, body: res.statusCode === 200 ? '' : res.body });
    };
    await send({ type: 'handshake', eventsSince: 0 });
    await send({
      type: 'event-notification',
      eventsSince: 1,
      events: [{ n: 1, focus: problem(), context: [patient()] }],
    });
    await send({ type: 'heartbeat', eventsSince: 1 });
    expect(answers).toEqual([
      { status: 200, body: '' },
      { status: 200, body: '' },
      { status: 200, body: '' },
    ]);
    expect(harness().fhir.calls('Condition/cond-examples-1')).toHaveLength(1);
    await expectRecordAndQuery();
  });
});
