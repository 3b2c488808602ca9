import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  QUEUE_VIEW_LOGIN,
  QUEUE_VIEW_MESSAGES,
  QUEUE_VIEW_PATH,
} from '../../../src/ingest/queue-view/queue-view-routes.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import {
  INGEST_TOKEN,
  PLANTED_PATIENT_ID,
  startQueueViewStack,
  type PolledQuery,
  type QueueViewStack,
  VIEW_TOKEN,
} from './support/queue-view-stack.ts';

const VIEW = { authorization: `Bearer ${VIEW_TOKEN}` };
const INGEST = { authorization: `Bearer ${INGEST_TOKEN}` };

/** The JSON update's event id: its control id. */
const JSON_ID = 'evt-messages-json-1';
/** A control id (MSH-10) and a sender (MSH-3) made to break out of the page's HTML. */
const HOSTILE_ID = '<script>alert(1)</script>';
const HOSTILE_SENDER = '<b>EVIL</b>';
const PLAIN_ID = 'MSG-MESSAGES-PLAIN-1';
/** The HL7 messages' local patient id (PID-3): never on a page, as the JSON one. */
const PLANTED_HL7_ID = 'MRN-PLANTED-MESSAGES-4410';

let stack: QueueViewStack;
let polled: PolledQuery;

const hl7 = (controlId: string, sender: string) =>
  [
    `MSH|^~\\&|${sender}|WESTHOSP|CW|CW|20260101120000||ADT^A08|${controlId}|P|2.5.1`,
    'EVN|A08|20260101120000',
    `PID|||${PLANTED_HL7_ID}^^^WEST^MR||QUIXOTEZ^ANN||19800530|F`,
    'DG1|1||E11.9^Type 2 diabetes^I10',
  ].join('\r') + '\r';

async function sendHl7(text: string): Promise<void> {
  const response = await fetch(`${stack.url}/v1/hl7v2`, {
    method: 'POST',
    headers: { ...INGEST, 'content-type': 'x-application/hl7-v2+er7' },
    body: text,
  });
  expect(response.status).toBe(200);
}

beforeAll(async () => {
  stack = await startQueueViewStack();
  // A JSON update of a patient with a preset: it opens a query, which the worker submits.
  const preset = await fetch(
    `${stack.url}/v1/patients/${encodeURIComponent(PLANTED_PATIENT_ID)}/presets/END002`,
    { method: 'PUT', headers: INGEST },
  );
  expect(preset.ok).toBe(true);
  const posted = await fetch(`${stack.url}/v1/record-updates`, {
    method: 'POST',
    headers: { ...INGEST, 'content-type': 'application/json' },
    body: JSON.stringify({
      patient_id: PLANTED_PATIENT_ID,
      event_id: JSON_ID,
      source: 'ehr-messages',
      assembled_patient: sampleRecord('messages'),
      changes: ['Condition'],
    }),
  });
  expect(posted.status).toBe(202);
  const answer = (await posted.json()) as {
    patient_service_id: string;
    queries: { ccsr_category: string; job_id: string }[];
  };
  polled = await stack.submitted({
    patientServiceId: answer.patient_service_id,
    ccsrCategory: 'END002',
    jobId: answer.queries[0]?.job_id ?? '',
  });
  // Two HL7 v2 messages over HTTP, the newest last: one of them hostile.
  await sendHl7(hl7(PLAIN_ID, 'EPICADT'));
  await sendHl7(hl7(HOSTILE_ID, HOSTILE_SENDER));
});
afterAll(() => stack?.close());

/** Every page fetched, to look for identifiers in. */
const pages: string[] = [];

async function page(path: string, expected = 200): Promise<string> {
  const response = await fetch(stack.at(path), { headers: VIEW, redirect: 'manual' });
  expect({ path, status: response.status }).toEqual({ path, status: expected });
  expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
  expect(response.headers.get('cache-control')).toBe('no-store');
  const text = await response.text();
  pages.push(text);
  return text;
}

/** The control ids of the list's rows, top to bottom (as the page escapes them). */
const rowIds = (html: string) =>
  [...html.matchAll(/<tr data-control-id="([^"]*)">/g)].map((m) => m[1] ?? '');
const kindsOf = (html: string) => [...html.matchAll(/<tr data-kind="([^"]*)">/g)].map((m) => m[1]);

const HOSTILE_ESCAPED = '&lt;script&gt;alert(1)&lt;/script&gt;';

describe('the queue view’s Messages pages (the message trace)', () => {
  it('lists the newest messages, newest first, with their feed, sender, type, answer, state and queries', async () => {
    const html = await page('/messages');
    expect(rowIds(html)).toEqual([HOSTILE_ESCAPED, PLAIN_ID, JSON_ID]);
    const row = (id: string) =>
      html.slice(html.indexOf(`data-control-id="${id}"`)).split('</tr>')[0];
    expect(row(JSON_ID)).toContain('<td>json</td>');
    expect(row(JSON_ID)).toContain('<td>queued</td>');
    expect(row(JSON_ID)).toContain('<td class="code">202</td>');
    expect(row(JSON_ID)).toMatch(/<td>1<\/td>\n<td>1<\/td>/);
    expect(row(PLAIN_ID)).toContain('<td>hl7v2-http</td>');
    expect(row(PLAIN_ID)).toContain('<td>EPICADT/WESTHOSP</td>');
    expect(row(PLAIN_ID)).toContain('<td>ADT^A08</td>');
    expect(row(PLAIN_ID)).toContain('<td class="code">AA</td>');
    expect(row(HOSTILE_ESCAPED)).toContain('&lt;b&gt;EVIL&lt;/b&gt;/WESTHOSP');
    expect(row(HOSTILE_ESCAPED)).toContain(
      `href="${QUEUE_VIEW_MESSAGES}/${encodeURIComponent(HOSTILE_ID)}"`,
    );
    // Nothing hostile is markup: the page has no script and no <b> at all.
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<b>');
  });

  it('filters by feed and pages with before', async () => {
    expect(rowIds(await page('/messages?feed=json'))).toEqual([JSON_ID]);
    expect(rowIds(await page('/messages?feed=hl7v2-http'))).toEqual([HOSTILE_ESCAPED, PLAIN_ID]);
    expect(rowIds(await page('/messages?feed=fhir'))).toEqual([]);
    expect(rowIds(await page('/messages?feed='))).toHaveLength(3);
    await page('/messages?feed=%3Cx%3E', 400);
    await page('/messages?before=soon', 400);

    const first = await page('/messages?limit=2');
    expect(rowIds(first)).toEqual([HOSTILE_ESCAPED, PLAIN_ID]);
    const next = /<a rel="next" href="([^"]+)">/.exec(first)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toMatch(new RegExp(`^${QUEUE_VIEW_MESSAGES}\\?before=\\d+$`));
    const second = await page(`${next?.slice(QUEUE_VIEW_PATH.length)}&limit=2`);
    expect(rowIds(second)).toEqual([JSON_ID]);
    expect(second).not.toContain('rel="next"');
  });

  it('opens one message’s trace: its steps in order, the patient by a short service id only', async () => {
    const html = await page(`/messages/${encodeURIComponent(JSON_ID)}`);
    expect(html).toContain(`<h1>Message <code>${JSON_ID}</code></h1>`);
    expect(html).toContain('Receipt 1 of 1');
    const kinds = kindsOf(html);
    expect(kinds.slice(0, 4)).toEqual(['answer', 'patient', 'query', 'submission']);
    expect(html).toContain('END002:1');
    expect(html).toContain(`remote job ${polled.remoteJobId}`);
    expect(html).toContain(`patient ${polled.patientServiceId.slice(0, 8)}…`);
    expect(html).not.toContain(polled.patientServiceId);

    const hostile = await page(`/messages/${encodeURIComponent(HOSTILE_ID)}`);
    expect(hostile).toContain(`<code>${HOSTILE_ESCAPED}</code>`);
    expect(hostile).not.toContain('<script');
    expect(hostile).not.toContain('<b>');
    expect(kindsOf(hostile)).toEqual(['answer', 'patient']);

    const none = await page('/messages/NO-SUCH-MESSAGE', 404);
    expect(none).toContain('Nothing is kept under this control id');
  });

  it('is the view’s: sign-in first, read-only, and linked from the board', async () => {
    for (const headers of [{}, { authorization: `Bearer ${INGEST_TOKEN}` }]) {
      for (const path of ['/messages', `/messages/${JSON_ID}`]) {
        const response = await fetch(stack.at(path), { headers, redirect: 'manual' });
        expect({ path, status: response.status }).toEqual({ path, status: 303 });
        expect(response.headers.get('location')).toBe(QUEUE_VIEW_LOGIN);
      }
    }
    const cookieless = await fetch(stack.at('/messages'), {
      headers: { cookie: 'cw_queue_view=v1.9999999999.forged' },
      redirect: 'manual',
    });
    expect(cookieless.status).toBe(303);
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const response = await fetch(stack.at(`/messages/${JSON_ID}`), { method, headers: VIEW });
      expect({ method, status: response.status }).toEqual({ method, status: 405 });
    }
    const unsigned = await fetch(stack.at('/messages'), { method: 'POST' });
    expect(unsigned.status).toBe(401);
    const head = await fetch(stack.at('/messages'), { method: 'HEAD', headers: VIEW });
    expect(head.status).toBe(200);
    const board = await fetch(stack.at('/'), { headers: VIEW });
    expect(await board.text()).toContain(QUEUE_VIEW_MESSAGES);
  });

  it('shows no patient identifier on any page', () => {
    expect(pages.length).toBeGreaterThan(10);
    for (const html of pages) {
      expect(html).not.toContain(PLANTED_PATIENT_ID);
      expect(html).not.toContain(PLANTED_HL7_ID);
      expect(html).not.toContain('QUIXOTEZ');
      expect(html).not.toContain(polled.patientServiceId);
    }
  });
});
