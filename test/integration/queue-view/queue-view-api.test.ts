import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { WEBHOOK_DELIVERIES } from '../../../src/delivery/webhook-deliveries-queue.ts';
import { QUERY_POLLS } from '../../../src/ingest/queue-view/polls-adapter.ts';
import {
  QUEUE_VIEW_COOKIE,
  QUEUE_VIEW_LOGIN,
} from '../../../src/ingest/queue-view/queue-view-routes.ts';
import { CONCORDANCE_QUERIES } from '../../../src/queues/queue-names.ts';
import { formatOpenApi, OPENAPI_FILE } from '../../../tools/write-openapi.ts';
import { startHarness } from '../ingest/support/ingest-harness.ts';
import {
  boardName,
  INGEST_TOKEN,
  PLANTED_PATIENT_ID,
  type PolledQuery,
  startQueueViewStack,
  type QueueViewStack,
  VIEW_TOKEN,
} from './support/queue-view-stack.ts';

interface BoardJob {
  id: string;
  name: string;
  data: unknown;
  failedReason: string;
  returnValue: unknown;
}
interface BoardQueue {
  name: string;
  displayName?: string;
  statuses: string[];
  counts: Record<string, number>;
  jobs: BoardJob[];
  readOnlyMode: boolean;
  allowRetries: boolean;
}

const VIEW = { authorization: `Bearer ${VIEW_TOKEN}` };

/** Two partitions: each has its own query and webhook queues and its own dead letters. */
let stack: QueueViewStack;
let dead: ResultEvent;
/** An event of partition 1, whose webhook queue has no worker here: its job stays waiting. */
let waiting: ResultEvent;
/**
 * A query opened by a record update of the planted local patient id through the ingest API,
 * submitted, and polled (the service keeps its job running).
 */
let polled: PolledQuery;
/** The board's names of the partition of the polled query: its polls, its query queue. */
let pollsName: string;
let queriesName: string;

beforeAll(async () => {
  stack = await startQueueViewStack({ partitions: 2 });
  dead = await stack.deadLetter();
  waiting = stack.event(1);
  await stack.routing.router.deliver(waiting);
  polled = await stack.submitted(await stack.update(PLANTED_PATIENT_ID, 'END002'));
  const prefix = stack.prefixes[stack.app.partitions.indexOf(polled.patientServiceId)] as string;
  pollsName = boardName(prefix, QUERY_POLLS);
  queriesName = boardName(prefix, CONCORDANCE_QUERIES);
});
afterAll(() => stack?.close());

const get = (path: string, headers: Record<string, string> = VIEW) =>
  fetch(stack.at(path), { headers, redirect: 'manual' });

async function boardQueues(query = ''): Promise<{ text: string; queues: BoardQueue[] }> {
  const response = await get(`/api/queues${query}`);
  expect(response.status).toBe(200);
  const text = await response.text();
  return { text, queues: (JSON.parse(text) as { queues: BoardQueue[] }).queues };
}

describe('queue view API (bull-board under /admin/queues, its own token)', () => {
  it('lists every queue of every partition and each partition’s dead letters, all read-only', async () => {
    const { queues } = await boardQueues();
    expect(queues.map((q) => q.name).sort()).toEqual(stack.expectedQueues().sort());
    for (const queue of queues) {
      expect(queue).toMatchObject({ readOnlyMode: true, allowRetries: false });
    }
    const [p0, p1] = stack.prefixes as [string, string];
    const byName = new Map(queues.map((q) => [q.name, q]));
    expect(byName.get(boardName(p0, 'dead-letters'))?.counts.failed).toBe(1);
    expect(byName.get(boardName(p1, 'dead-letters'))?.counts.failed).toBe(0);
    expect(byName.get(boardName(p1, WEBHOOK_DELIVERIES))?.counts.waiting).toBe(1);
    expect(byName.get(boardName(p0, WEBHOOK_DELIVERIES))?.displayName).toBe(
      `${WEBHOOK_DELIVERIES} · partition 0`,
    );
    // One query is being polled: due now (waiting) or later (delayed), in its own partition.
    const polling = (name: string) => {
      const counts = byName.get(name)?.counts ?? {};
      return (counts.waiting ?? 0) + (counts.delayed ?? 0);
    };
    expect(stack.prefixes.map((p) => polling(boardName(p, QUERY_POLLS))).sort()).toEqual([0, 1]);
    expect(polling(pollsName)).toBe(1);
    expect(byName.get(pollsName)?.statuses).toEqual(['latest', 'waiting', 'delayed']);
  });

  it('shows the query being polled: its category and remote job id, polls, next poll; no service id', async () => {
    const { text, queues } = await boardQueues(
      `?activeQueue=${encodeURIComponent(pollsName)}&status=latest&page=1&jobsPerPage=10`,
    );
    const [job, ...others] = queues.find((q) => q.name === pollsName)?.jobs ?? [];
    expect(others).toEqual([]);
    expect(job).toMatchObject({
      id: polled.remoteJobId,
      name: 'END002',
      data: {
        ccsr_category: 'END002',
        remote_job_id: polled.remoteJobId,
        query_id: polled.queryId,
        polls: expect.any(Number),
        next_poll_at: expect.any(String),
        submitted_at: expect.any(String),
        age_s: expect.any(Number),
        resubmits: 0,
      },
    });
    const path = `/api/queues/${encodeURIComponent(pollsName)}/${encodeURIComponent(polled.remoteJobId)}`;
    const detail = await get(path);
    expect(detail.status).toBe(200);
    const detailText = await detail.text();
    const { status } = JSON.parse(detailText) as { status: string };
    expect(['waiting', 'delayed']).toContain(status);
    expect(JSON.parse(detailText)).toMatchObject({
      job: { id: polled.remoteJobId, name: 'END002' },
    });
    expect((await get(`/api/queues/${encodeURIComponent(pollsName)}/no-such-job`)).status).toBe(
      404,
    );
    // The job page's other reads: no logs, and no flow (the poll is in none).
    const logs = await get(`${path}/logs`);
    expect(logs.status).toBe(200);
    expect(await logs.json()).toEqual([]);
    const flow = await get(`${path}/flow`);
    expect(flow.status).toBe(200);
    expect(await flow.json()).toMatchObject({ flowRoot: null, isFlowNode: false });
    for (const body of [text, detailText]) {
      expect(body).not.toContain(polled.patientServiceId);
      expect(body).not.toContain(PLANTED_PATIENT_ID);
    }
  });

  it('shows the query’s submission job as completed in concordance-queries, with the remote job id', async () => {
    const { queues } = await boardQueues(
      `?activeQueue=${encodeURIComponent(queriesName)}&status=completed&page=1&jobsPerPage=10`,
    );
    const queue = queues.find((q) => q.name === queriesName);
    expect(queue?.counts.completed).toBe(1);
    expect(queue?.jobs).toEqual([
      expect.objectContaining({
        id: polled.jobId,
        name: 'END002',
        returnValue: { remote_job_id: polled.remoteJobId },
      }),
    ]);
  });

  it('shows the dead letter as a failed job: event, channel, last error; no patient', async () => {
    const name = boardName(stack.prefixes[0] as string, 'dead-letters');
    const { queues } = await boardQueues(
      `?activeQueue=${encodeURIComponent(name)}&status=failed&page=1&jobsPerPage=10`,
    );
    const [job, ...others] = queues.find((q) => q.name === name)?.jobs ?? [];
    expect(others).toEqual([]);
    expect(job).toMatchObject({
      id: dead.id,
      name: 'webhook concordance.completed',
      failedReason: 'ERR_WEBHOOK_STATUS (HTTP 503): the endpoint answered 503',
      data: {
        event: { id: dead.id, ccsr_category: dead.ccsr_category, type: dead.type },
        channel: 'webhook',
        last_error: { code: 'ERR_WEBHOOK_STATUS', status: 503 },
      },
    });
    expect((job?.data as { attempts: number }).attempts).toBeGreaterThan(1);
    const detail = await get(`/api/queues/${encodeURIComponent(name)}/${dead.id}`);
    expect(detail.status).toBe(200);
    expect(await detail.json()).toMatchObject({ job: { id: dead.id }, status: 'failed' });
  });

  it('never shows the planted local patient id: every queue, status, job and dead letter', async () => {
    const bodies: string[] = [];
    const seenJobs = new Set<string>();
    const { text, queues } = await boardQueues();
    bodies.push(text);
    for (const queue of queues) {
      for (const status of queue.statuses) {
        const query = `?activeQueue=${encodeURIComponent(queue.name)}&status=${status}&page=1&jobsPerPage=50`;
        const page = await boardQueues(query);
        bodies.push(page.text);
        const jobs = page.queues.find((q) => q.name === queue.name)?.jobs ?? [];
        for (const job of jobs) {
          const path = `/api/queues/${encodeURIComponent(queue.name)}/${encodeURIComponent(job.id)}`;
          for (const detail of [path, `${path}/logs`]) {
            const response = await get(detail);
            expect(response.status).toBe(200);
            bodies.push(await response.text());
          }
          seenJobs.add(`${queue.name} ${job.id}`);
        }
      }
    }
    const [p0, p1] = stack.prefixes as [string, string];
    const outbound = boardName(p0, stack.config.delivery.outbound_queue.name);
    // The jobs looked at: both events in the outbound queue, the waiting webhook delivery, the
    // dead letter, the polled query and its submission job (a test that saw no job could not
    // fail).
    expect([...seenJobs].sort()).toEqual(
      expect.arrayContaining([
        `${outbound} ${dead.id}`,
        `${outbound} ${waiting.id}`,
        `${boardName(p0, 'dead-letters')} ${dead.id}`,
        `${pollsName} ${polled.remoteJobId}`,
        `${queriesName} ${polled.jobId}`,
      ]),
    );
    expect([...seenJobs].some((job) => job.startsWith(boardName(p1, WEBHOOK_DELIVERIES)))).toBe(
      true,
    );
    for (const body of bodies) expect(body).not.toContain(PLANTED_PATIENT_ID);
  });

  it('is read-only: the board’s changes answer 405 and change nothing', async () => {
    const name = encodeURIComponent(boardName(stack.prefixes[1] as string, WEBHOOK_DELIVERIES));
    const deadLetters = encodeURIComponent(boardName(stack.prefixes[0] as string, 'dead-letters'));
    const polls = encodeURIComponent(pollsName);
    const remoteJob = encodeURIComponent(polled.remoteJobId);
    const changes: [string, string][] = [
      ['PUT', `/api/queues/${name}/clean/waiting`],
      ['PUT', `/api/queues/${name}/empty`],
      ['PUT', `/api/queues/${name}/pause`],
      ['PUT', `/api/queues/${name}/obliterate`],
      ['PUT', `/api/queues/pause`],
      ['POST', `/api/queues/${name}/add`],
      ['PUT', `/api/queues/${deadLetters}/${dead.id}/retry`],
      ['PUT', `/api/queues/${deadLetters}/retry/failed`],
      ['PUT', `/api/queues/${polls}/${remoteJob}/promote`],
      ['PUT', `/api/queues/${polls}/${remoteJob}/clean`],
      ['PUT', `/api/queues/${polls}/promote`],
      ['PUT', `/api/queues/${polls}/clean/delayed`],
      ['PUT', `/api/queues/${polls}/empty`],
      ['PUT', `/api/queues/${polls}/pause`],
    ];
    for (const [method, path] of changes) {
      const response = await fetch(stack.at(path), {
        method,
        headers: { ...VIEW, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'x', data: {} }),
      });
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 405 });
      expect(await response.json()).toEqual({ detail: 'the queue view is read-only' });
    }
    const { queues } = await boardQueues();
    const byName = new Map(queues.map((q) => [q.name, q]));
    expect(byName.get(decodeURIComponent(name))?.counts.waiting).toBe(1);
    expect(byName.get(decodeURIComponent(deadLetters))?.counts.failed).toBe(1);
    const pollCounts = byName.get(pollsName)?.counts ?? {};
    expect((pollCounts.waiting ?? 0) + (pollCounts.delayed ?? 0)).toBe(1);
  });

  it('leaves the ingest API’s OpenAPI description as checked in (docs/openapi.json)', async () => {
    const response = await fetch(stack.at('/').replace(/\/admin\/queues\/?$/, '/openapi.json'), {
      headers: { authorization: `Bearer ${INGEST_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(await formatOpenApi(await response.json())).toBe(await readFile(OPENAPI_FILE, 'utf8'));
  });

  it('without its token: pages redirect to the sign-in form, the API and assets answer 401', async () => {
    for (const path of ['', '/', `/queue/${encodeURIComponent(stack.expectedQueues()[0] ?? '')}`]) {
      const response = await get(path, {});
      expect({ path, status: response.status }).toEqual({ path, status: 303 });
      expect(response.headers.get('location')).toBe(QUEUE_VIEW_LOGIN);
    }
    const ingest = { authorization: `Bearer ${INGEST_TOKEN}` };
    const cookie = { cookie: `${QUEUE_VIEW_COOKIE}=v1.99999999999.${'A'.repeat(43)}` };
    for (const headers of [{}, ingest, cookie, { authorization: `Bearer ${VIEW_TOKEN}x` }]) {
      for (const path of ['/api/queues', '/api/redis/stats', '/static/images/logo.svg']) {
        const response = await get(path, headers);
        expect({ path, status: response.status }).toEqual({ path, status: 401 });
      }
    }
    // Every 401 is counted by route pattern and reason (no credentials, or ones not accepted).
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    const counted = (reason: string) =>
      `cw_ingest_unauthorized_total{route="/admin/queues/api/queues",reason="${reason}"}`;
    expect(metrics).toContain(`${counted('missing')} 1\n`);
    expect(metrics).toContain(`${counted('invalid')} 3\n`);
    // The view's token opens nothing of the ingest API either.
    const ingestRoute = await fetch(`${stack.url}/v1/presets/x`, { headers: VIEW });
    expect(ingestRoute.status).toBe(401);
  });

  it('signs in with its token (HttpOnly, SameSite=Strict session cookie) and out again', async () => {
    const form = (token: string, headers: Record<string, string> = {}) =>
      fetch(stack.at('/login'), {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ token }),
      });
    const refused = await form(INGEST_TOKEN);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('set-cookie')).toBeNull();
    expect(await refused.text()).toContain('That token is not accepted.');
    expect(await (await fetch(`${stack.url}/metrics`)).text()).toContain(
      'cw_ingest_unauthorized_total{route="/admin/queues/login",reason="invalid"} 1\n',
    );

    const accepted = await form(VIEW_TOKEN);
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get('location')).toBe('/admin/queues/');
    const setCookie = accepted.headers.get('set-cookie') ?? '';
    // Plain HTTP here: `Secure` only when the request came over TLS (secure_cookie: auto).
    expect(setCookie.split('; ').slice(1).sort()).toEqual(
      ['HttpOnly', 'Max-Age=28800', 'Path=/admin/queues', 'SameSite=Strict'].sort(),
    );
    expect(setCookie).not.toContain(VIEW_TOKEN);
    // Behind a proxy that terminated TLS and says so, the cookie is Secure.
    const proxied = await form(VIEW_TOKEN, { 'x-forwarded-proto': 'https' });
    expect(proxied.headers.get('set-cookie')?.split('; ')).toContain('Secure');
    const session = { cookie: setCookie.split(';')[0] ?? '' };
    expect((await get('/api/queues', session)).status).toBe(200);
    const page = await get('/', session);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await page.text()).toContain('<base href="/admin/queues/"');

    const out = await get('/logout', session);
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe(QUEUE_VIEW_LOGIN);
    expect(out.headers.get('set-cookie')).toMatch(new RegExp(`^${QUEUE_VIEW_COOKIE}=;`));
  });
});

describe('queue view, off by default', () => {
  it('is not served: /admin/queues is an unknown route of the ingest API', async () => {
    const harness = await startHarness();
    try {
      expect(harness.config.admin.queue_view.enabled).toBe(false);
      const auth = { authorization: 'Bearer ingest-test-token-0123456789' };
      for (const url of ['/admin/queues', '/admin/queues/login', '/admin/queues/api/queues']) {
        expect((await harness.app.inject({ url, headers: auth })).statusCode).toBe(404);
        expect((await harness.app.inject({ url })).statusCode).toBe(401);
      }
    } finally {
      await harness.close();
    }
  });
});
