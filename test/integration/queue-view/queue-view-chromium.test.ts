import { describe, expect, it, onTestFinished } from 'vitest';
import { WEBHOOK_DELIVERIES } from '../../../src/delivery/webhook-deliveries-queue.ts';
import { QUERY_POLLS } from '../../../src/ingest/queue-view/polls-adapter.ts';
import { QUEUE_VIEW_COOKIE } from '../../../src/ingest/queue-view/queue-view-routes.ts';
import { CONCORDANCE_QUERIES } from '../../../src/queues/queue-names.ts';
import { DEMO_PATIENTS, demoRecord } from '../../../demo/sample-patients.ts';
import {
  INGEST_TOKEN,
  PLANTED_PATIENT_ID,
  startQueueViewStack,
  VIEW_TOKEN,
} from './support/queue-view-stack.ts';
import { chromiumInProfile } from './support/chromium.ts';

describe('queue view in Chromium', () => {
  it('signs in with the queue-view token and shows every queue, the queries and their polls, and the dead letter; without it the page redirects to sign-in and the API answers 401', async () => {
    const closers: (() => unknown)[] = [];
    onTestFinished(async () => {
      for (const close of closers.splice(0)) await close();
    });
    const context = await chromiumInProfile('queue-view-chromium', closers);
    const stack = await startQueueViewStack();
    closers.unshift(() => stack.close());
    const dead = await stack.deadLetter();
    // The demo's traffic: each demo patient's record, for each of its presets; every query is
    // submitted and polled.
    for (const patient of DEMO_PATIENTS) {
      for (const { category } of patient.problems) {
        const opened = await stack.update(
          patient.patientId,
          category,
          undefined,
          demoRecord(patient, 1),
        );
        await stack.submitted(opened);
      }
    }
    // Last, a query of the planted patient, submitted and polled (the service keeps its job
    // running; its job of `concordance-queries` has completed): the newest, on top of the lists.
    const polled = await stack.submitted(await stack.update(PLANTED_PATIENT_ID, 'END002'));
    /** No patient identifier on the page: the planted one, nor any of the demo's. */
    const expectNoPatient = (html: string) => {
      for (const id of [PLANTED_PATIENT_ID, ...DEMO_PATIENTS.map((p) => p.patientId)]) {
        expect(html).not.toContain(id);
      }
    };
    // Another, through an ingest with a long debounce: its job waits, delayed, in the queue.
    const slowIngest = await stack.ingestWith({ debounce_ms: 3_600_000 });
    const later = await stack.update(`${PLANTED_PATIENT_ID}-LATER`, 'END002', slowIngest);
    await stack.relayed();

    const page = await context.newPage();
    const api = stack.at('/api/queues');

    // Without the token: the API answers 401, the page sends the browser to the sign-in form.
    expect((await context.request.get(api)).status()).toBe(401);
    await page.goto(stack.at());
    expect(page.url()).toBe(stack.at('/login'));

    // An ingest token is no queue-view token.
    await page.fill('#token', INGEST_TOKEN);
    await page.click('button[type=submit]');
    await page.getByRole('alert').getByText('That token is not accepted.').waitFor();
    expect((await context.cookies()).map((c) => c.name)).not.toContain(QUEUE_VIEW_COOKIE);

    await page.fill('#token', VIEW_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(stack.at('/'));
    const [session, ...others] = (await context.cookies()).filter(
      (c) => c.name === QUEUE_VIEW_COOKIE,
    );
    expect(others).toEqual([]);
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin/queues' });
    expect(session?.value).not.toContain(VIEW_TOKEN);

    // Every queue of the deployment, the polls and the dead letters, in the board's menu.
    const menu = [
      CONCORDANCE_QUERIES,
      stack.config.delivery.outbound_queue.name,
      WEBHOOK_DELIVERIES,
      QUERY_POLLS,
      'dead-letters',
    ];
    const sidebar = page.locator('#bull-board-sidebar');
    for (const name of menu) await sidebar.getByRole('link', { name, exact: true }).waitFor();

    // The query queue: the submitted query's job completed with its remote job id; the job of
    // the query still debouncing is delayed.
    await sidebar.getByRole('link', { name: CONCORDANCE_QUERIES, exact: true }).click();
    await page.getByRole('link', { name: /^completed/i }).click();
    await page.getByText(polled.jobId, { exact: true }).waitFor();
    await page.getByText(`"${polled.remoteJobId}"`).waitFor();
    await page.getByRole('link', { name: /^delayed/i }).click();
    await page.getByText(later.jobId, { exact: true }).waitFor();
    expect(await page.getByText(polled.jobId, { exact: true }).count()).toBe(0);
    expectNoPatient(await page.content());

    // The polls: the query being polled, by its remote job id and category; no patient, and not
    // its service id either.
    await sidebar.getByRole('link', { name: QUERY_POLLS, exact: true }).click();
    await page.getByText(polled.remoteJobId, { exact: true }).waitFor();
    await page
      .getByRole('heading', { name: /^END002/ })
      .first()
      .waitFor();
    await page.getByText('"END002"').first().waitFor();
    await page.getByText(`"${polled.queryId}"`).waitFor();
    const pollsPage = await page.content();
    expectNoPatient(pollsPage);
    expect(pollsPage).not.toContain(polled.patientServiceId);
    // The poll's own page.
    await page.getByText(polled.remoteJobId, { exact: true }).click();
    await page.waitForURL(new RegExp(`/${polled.remoteJobId}$`));
    // Its way back to the list names the queue in full (the list's own page does not).
    const pollsName = `${stack.prefixes[0] as string}:${QUERY_POLLS}`;
    await page.getByRole('link', { name: pollsName, exact: true }).waitFor();
    await page.getByText('"END002"').waitFor();
    expect(await page.content()).not.toContain(polled.patientServiceId);

    // The dead letter: a failed job of the dead letters, with its last error; no patient.
    await sidebar.getByRole('link', { name: 'dead-letters', exact: true }).click();
    await page.getByText(dead.id, { exact: true }).waitFor();
    await page.getByText('ERR_WEBHOOK_STATUS (HTTP 503): the endpoint answered 503').waitFor();
    await page.getByRole('tab', { name: 'Data', exact: true }).click();
    await page.getByText('"ERR_WEBHOOK_STATUS"').first().waitFor();
    expectNoPatient(await page.content());
    expect((await context.request.get(api)).status()).toBe(200);

    // Signed out from the board's user menu: the session is gone, the API answers 401 again.
    await page.locator('header').getByRole('button').last().click();
    await page.getByText('Sign out', { exact: true }).click();
    await page.waitForURL(stack.at('/login'));
    expect((await context.cookies()).map((c) => c.name)).not.toContain(QUEUE_VIEW_COOKIE);
    expect((await context.request.get(api)).status()).toBe(401);
    await page.goto(stack.at('/'));
    expect(page.url()).toBe(stack.at('/login'));
  });
});
