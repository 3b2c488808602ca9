import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  QUEUE_VIEW_MESSAGES,
  QUEUE_VIEW_PATH,
} from '../../../src/ingest/queue-view/queue-view-routes.ts';
import { startWebhookReceiver } from '../../../tools/webhook-receiver.ts';
import { eventually } from '../../support/eventually.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import {
  FAST_FEED_PIPELINE_LINES,
  startPipelineProcesses,
} from '../../support/pipeline-processes.ts';
import { condition, r4Notification } from '../fhir/support/notifications.ts';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';
import { chromiumInProfile } from './support/chromium.ts';

const API_KEY = 'messages-chromium-api-key';
const TOKEN = 'messages-chromium-ingest-token-0123456789';
const VIEW_TOKEN = randomBytes(24).toString('base64url');

/** The local patient ids of the three messages: never on a page. */
const HL7_PATIENT = 'MRN-PLANTED-MSGS-CHROMIUM-1';
const JSON_PATIENT = 'MRN-PLANTED-MSGS-CHROMIUM-2';
const FHIR_PATIENT = 'planted-msgs-chromium-3';
const ADT_ID = 'MSG-CHROMIUM-ADT-1';
const JSON_ID = 'evt-chromium-json-1';
/** A FHIR notification's control id is its event number. */
const FHIR_ID = '5150';
/** Every kind of step of a message followed to its delivered result, in order. */
const ALL_STEPS = ['answer', 'patient', 'query', 'submission', 'poll', 'result', 'delivery'];

describe('the Messages page in Chromium', () => {
  it('follows an HL7 ADT (with a DG1, over MLLP), a FHIR notification and a JSON update through `start` to the webhook: the list finds them, the trace shows every step in order', async () => {
    const closers: (() => unknown)[] = [];
    onTestFinished(async () => {
      for (const close of closers.splice(0)) await close();
    });
    const context = await chromiumInProfile('messages-chromium', closers);
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const receiver = await startWebhookReceiver({ secret, respond: () => 204 });
    closers.unshift(() => receiver.close());
    // `concordance-worker start` (ingest and workers) and the local service, as processes.
    const p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      configLines: [...FAST_FEED_PIPELINE_LINES],
      latency: '0-50',
      env: {
        QUEUE_VIEW_ENABLED: 'true',
        QUEUE_VIEW_TOKENS: VIEW_TOKEN,
        WEBHOOK_URL: receiver.url,
        WEBHOOK_SECRET: secret,
      },
    });
    closers.unshift(() => p.close());
    const view = (path = '') => `${p.ingestUrl}${QUEUE_VIEW_PATH}${path}`;

    // An HL7 v2 ADT with a diagnosis (DG1) over MLLP: its problem list opens a query.
    const adt = [
      `MSH|^~\\&|EPICADT|WESTHOSP|CW|CW|20260101120000||ADT^A08^ADT_A01|${ADT_ID}|P|2.5.1`,
      'EVN|A08|20260101120000',
      `PID|1||${HL7_PATIENT}^^^WEST^MR||Testpatient^Ann||${new Date().getUTCFullYear() - 61}0415|F`,
      'DG1|1||E11.9^Type 2 diabetes^I10',
    ].join('\r');
    const ack = await sendOne(p.mllpPort, adt);
    expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', ADT_ID]);
    // A JSON record update asking for a category.
    const json = await fetch(`${p.ingestUrl}/v1/record-updates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        patient_id: JSON_PATIENT,
        event_id: JSON_ID,
        source: 'ehr-chromium',
        assembled_patient: sampleRecord('messages-chromium'),
        ccsr_categories: ['END002'],
      }),
    });
    expect(json.status).toBe(202);
    // A FHIR subscription notification (R4 backport, full resources) with a problem-list diabetes.
    const notification = await fetch(`${p.ingestUrl}/v1/fhir/notifications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(
        r4Notification({
          subscription: 'https://ehr.example.org/fhir/Subscription/sub-msgs',
          type: 'event-notification',
          eventsSince: Number(FHIR_ID),
          events: [{ n: Number(FHIR_ID), focus: 'Condition/msgs-c1' }],
          resources: [
            {
              resourceType: 'Patient',
              id: FHIR_PATIENT,
              gender: 'male',
              birthDate: `${new Date().getUTCFullYear() - 64}-02-11`,
            },
            condition('msgs-c1', FHIR_PATIENT),
          ],
        }),
      ),
    });
    expect(notification.status).toBe(200);

    // The three results reach the webhook receiver; each delivery's end is written by the script
    // that ends it, just after the receiver answered: wait until the trace holds it.
    await receiver.until((r) => r.events.length >= 3);
    for (const id of [ADT_ID, JSON_ID, FHIR_ID]) {
      await eventually(
        async () =>
          (
            await fetch(view(`/messages/${id}`), {
              headers: { authorization: `Bearer ${VIEW_TOKEN}` },
            })
          ).text(),
        (html) => html.includes('webhook delivered'),
      );
    }

    const page = await context.newPage();
    const expectNoPatient = async () => {
      const html = await page.content();
      for (const id of [HL7_PATIENT, JSON_PATIENT, FHIR_PATIENT, 'Testpatient']) {
        expect(html).not.toContain(id);
      }
    };

    // Signed out: the Messages page sends the browser to the sign-in form.
    await page.goto(view('/messages'));
    expect(page.url()).toBe(view('/login'));
    await page.fill('#token', VIEW_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(view('/'));

    // From the board's menu to the Messages page.
    await page.locator('header').getByRole('button').last().click();
    await page.getByText('Messages', { exact: true }).click();
    await page.waitForURL(`${p.ingestUrl}${QUEUE_VIEW_MESSAGES}`);
    await page.getByRole('heading', { name: 'Messages', exact: true }).waitFor();
    const table = page.locator('table');
    await table.getByRole('link', { name: ADT_ID, exact: true }).waitFor();
    await table.getByRole('link', { name: JSON_ID, exact: true }).waitFor();
    await table.getByRole('link', { name: FHIR_ID, exact: true }).waitFor();
    await expectNoPatient();

    // The feed filter: the MLLP feed's messages only.
    await page.selectOption('#feed', 'hl7v2-mllp');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(`${p.ingestUrl}${QUEUE_VIEW_MESSAGES}?feed=hl7v2-mllp`);
    const row = page.locator(`tr[data-control-id="${ADT_ID}"]`);
    await row.waitFor();
    expect(await row.locator('td').allInnerTexts()).toEqual([
      expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      'hl7v2-mllp',
      ADT_ID,
      'EPICADT/WESTHOSP',
      'ADT^A08',
      'AA',
      'queued',
      '1',
      '1',
    ]);
    expect(await table.getByRole('link', { name: JSON_ID, exact: true }).count()).toBe(0);

    // The ADT's trace: every step, in order, from its ACK to the delivered webhook.
    await table.getByRole('link', { name: ADT_ID, exact: true }).click();
    await page.waitForURL(`${p.ingestUrl}${QUEUE_VIEW_MESSAGES}/${ADT_ID}`);
    await page.getByRole('heading', { name: `Message ${ADT_ID}` }).waitFor();
    const steps = page.locator('tr[data-kind]');
    expect(await steps.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-kind')))).toEqual(
      ALL_STEPS,
    );
    const codeOf = async (kind: string) =>
      page.locator(`tr[data-kind="${kind}"] td`).nth(2).innerText();
    expect(await codeOf('answer')).toBe('AA');
    expect(await codeOf('query')).toBe('opened');
    expect(await codeOf('submission')).toBe('submitted');
    expect(await codeOf('result')).toBe('completed');
    expect(await codeOf('delivery')).toBe('delivered');
    await page.getByText(/^hl7v2-mllp ADT\^A08, from EPICADT\/WESTHOSP, answered AA/).waitFor();
    await expectNoPatient();

    // The JSON update's trace, reached by its address.
    await page.goto(view(`/messages/${JSON_ID}`));
    expect(await steps.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-kind')))).toEqual(
      ALL_STEPS,
    );
    expect(await codeOf('answer')).toBe('202');
    expect(await codeOf('delivery')).toBe('delivered');
    await expectNoPatient();

    // The FHIR notification's trace, from the list filtered to the FHIR feed.
    await page.goto(view('/messages?feed=fhir'));
    await table.getByRole('link', { name: FHIR_ID, exact: true }).click();
    await page.waitForURL(`${p.ingestUrl}${QUEUE_VIEW_MESSAGES}/${FHIR_ID}`);
    expect(await steps.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-kind')))).toEqual(
      ALL_STEPS,
    );
    expect(await codeOf('answer')).toBe('200');
    expect(await codeOf('result')).toBe('completed');
    expect(await codeOf('delivery')).toBe('delivered');
    await expectNoPatient();
  });
});
