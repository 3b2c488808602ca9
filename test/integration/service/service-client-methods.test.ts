import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createServiceClient,
  type ServiceClient,
} from '../../../src/service/create-service-client.ts';
import { ServiceValidationError } from '../../../src/service/errors/service-validation-error.ts';
import {
  startSimulator,
  type RunningSimulator,
  type SimulatorOptions,
} from '../../../src/simulator/start-simulator.ts';
import { recordingHooks } from './support/recorders.ts';
import { SAMPLE_CATEGORY, samplePatient } from '../../support/sample-patient.ts';
import { SimulatorAdmin } from './support/simulator-admin.ts';

const API_KEY = 'test-key';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A simulator on a free port with 120 relationships, its admin API, and a client of it. */
async function startService(options: Partial<SimulatorOptions> = {}) {
  const running = await startSimulator({
    port: 0,
    apiKeys: [API_KEY],
    relationshipCount: 120,
    ...options,
  });
  return {
    running,
    admin: new SimulatorAdmin(running.url, API_KEY),
    client: createServiceClient({ baseUrl: running.url, apiKey: API_KEY }),
  };
}

let simulator: RunningSimulator;
let admin: SimulatorAdmin;
let client: ServiceClient;

beforeAll(async () => {
  ({ running: simulator, admin, client } = await startService({ latency: { minMs: 0, maxMs: 0 } }));
});
afterAll(() => simulator.close());
beforeEach(() => admin.reset());

/** Polls without waiting: with zero latency the job is done by the first or second read. */
async function pollUntilSettled(c: ServiceClient, jobId: string) {
  for (let i = 0; i < 20; i++) {
    const job = await c.concordance.get(jobId);
    if (job.state !== 'pending') return job;
  }
  throw new Error(`job ${jobId} still pending after 20 polls`);
}

describe('concordance', () => {
  it('submits a query and reads the finished job', async () => {
    const { jobId } = await client.concordance.submit({
      assembled_patient: samplePatient,
      ccsr_category: SAMPLE_CATEGORY,
    });
    expect(jobId).toEqual(expect.any(String));
    expect(jobId).not.toBe('');

    const job = await pollUntilSettled(client, jobId);
    expect(job.state).toBe('success');
    expect(job.status.toLowerCase()).toBe('completed');
    expect(job.concordance).toEqual(expect.any(Object));
    expect(job.raw).toMatchObject({ status: job.status });

    const log = await admin.serviceRequests();
    expect(log[0]).toMatchObject({ method: 'POST', path: '/v1/concordance' });
    // The simulator received the record as sent.
    expect(log[0]?.body).toEqual({
      assembled_patient: samplePatient,
      ccsr_category: SAMPLE_CATEGORY,
    });
    expect(log[1]?.path).toBe(`/v1/concordance/${encodeURIComponent(jobId)}`);
  });

  it('reports failed, lost and never-ending jobs as failure, lost and pending', async () => {
    await admin.setFaults({ job_failure_rate: 1 });
    const failed = await client.concordance.submit({
      assembled_patient: samplePatient,
      ccsr_category: SAMPLE_CATEGORY,
    });
    expect((await pollUntilSettled(client, failed.jobId)).state).toBe('failure');

    await admin.setFaults({ job_loss_rate: 1 });
    const lost = await client.concordance.submit({
      assembled_patient: samplePatient,
      ccsr_category: SAMPLE_CATEGORY,
    });
    const lostJob = await pollUntilSettled(client, lost.jobId);
    expect(lostJob).toMatchObject({ state: 'lost', concordance: null });

    expect((await client.concordance.get('no-such-job')).state).toBe('lost');
  });

  it('treats an unknown status as pending and warns about it once per client', async () => {
    await admin.setFaults({ never_finish_rate: 1 });
    const hooks = recordingHooks();
    // With no known pending values, "running" (and "queued") become unknown.
    const strict = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      statuses: { pending: [] },
      logger: hooks.logger,
    });
    const { jobId } = await strict.concordance.submit({
      assembled_patient: samplePatient,
      ccsr_category: SAMPLE_CATEGORY,
    });
    const statuses: string[] = [];
    for (let i = 0; i < 4; i++) {
      const job = await strict.concordance.get(jobId);
      expect(job.state).toBe('pending');
      statuses.push(job.status);
    }
    const distinct = [...new Set(statuses)];
    expect(hooks.warnings).toHaveLength(distinct.length);
    expect(hooks.warnings.map((w) => w.obj)).toEqual(distinct.map((status) => ({ status })));
  });
});

describe('prevent', () => {
  it('registers a patient and gets recommendations for the service id', async () => {
    const serviceId = await client.prevent.registerPatient('hospital-patient-0001');
    expect(serviceId).toEqual(expect.any(String));
    expect(serviceId).not.toContain('hospital-patient-0001');

    const recommendations = await client.prevent.recommend({
      patient_service_id: serviceId,
      patient_biomarkers: { hba1c_percent: 7.1 },
      patient_history: { smoker: false },
      patient_demographics: { age: 57 },
    });
    expect(recommendations).toEqual(expect.any(Object));

    const log = await admin.serviceRequests();
    expect(log.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/patient',
      `POST /v1/patient/${encodeURIComponent(serviceId)}`,
    ]);
    // The simulator redacts the identifier in its log; registering it again proves it was sent.
    expect(log[0]?.body).toEqual({ unique_patient_identifier: expect.any(String) });
    expect(await client.prevent.registerPatient('hospital-patient-0001')).toBe(serviceId);
    expect(await client.prevent.registerPatient('hospital-patient-0002')).not.toBe(serviceId);
  });
});

describe('relationships', () => {
  it('lists a page with its total and gets one relationship by id', async () => {
    const page = await client.relationships.list({ limit: 5, include_total: true });
    expect(page.data).toHaveLength(5);
    expect(page.total).toBe(120);

    const first = page.data[0];
    expect(first?.relationship_id).toEqual(expect.any(String));
    const one = await client.relationships.get(first?.relationship_id ?? '');
    expect(one).toEqual(first);
  });

  it('projects fields and leaves total out unless asked', async () => {
    const page = await client.relationships.list({ fields: ['relationship_id'], limit: 3 });
    expect(page.total).toBeUndefined();
    expect(page.data).toHaveLength(3);
    for (const item of page.data) expect(Object.keys(item)).toEqual(['relationship_id']);
    expect((await admin.serviceRequests())[0]?.path).toBe(
      '/v1/relationships?fields=relationship_id&limit=3',
    );
  });

  it('filters and searches by relationship_id', async () => {
    const ids = (
      await client.relationships.list({ fields: ['relationship_id'], limit: 3 })
    ).data.map((r) => r.relationship_id ?? '');
    const filtered = await client.relationships.list({ filter: { relationship_id: ids } });
    expect(filtered.data.map((r) => r.relationship_id).sort()).toEqual([...ids].sort());

    const searched = await client.relationships.list({ search: { relationship_id: ids[0] ?? '' } });
    expect(searched.data.map((r) => r.relationship_id)).toContain(ids[0]);
  });

  it('iterates over every page of a filter result', async () => {
    const ids = (
      await client.relationships.list({ fields: ['relationship_id'], limit: 25, offset: 40 })
    ).data.map((r) => r.relationship_id ?? '');
    expect(ids).toHaveLength(25);
    await admin.reset();

    const seen: string[] = [];
    for await (const item of client.relationships.iterate({
      filter: { relationship_id: ids },
      limit: 10,
    })) {
      seen.push(item.relationship_id ?? '');
    }
    expect(seen.sort()).toEqual([...ids].sort());

    const offsets = (await admin.serviceRequests()).map((r) =>
      new URL(r.path, 'http://x').searchParams.get('offset'),
    );
    // Pages of 10, 10 and 5: the short page ends the walk.
    expect(offsets).toEqual(['0', '10', '20']);
  });

  it('stops iterating at total without asking for an empty page', async () => {
    const seen: string[] = [];
    for await (const item of client.relationships.iterate({
      include_total: true,
      fields: 'relationship_id',
      limit: 40,
    })) {
      seen.push(item.relationship_id ?? '');
    }
    expect(new Set(seen).size).toBe(120);
    expect(await admin.serviceRequests()).toHaveLength(3);
  });
});

describe('a page size the service refuses', () => {
  let capped: RunningSimulator;
  let cappedAdmin: SimulatorAdmin;
  let cappedClient: ServiceClient;

  beforeAll(async () => {
    ({
      running: capped,
      admin: cappedAdmin,
      client: cappedClient,
    } = await startService({ maxListLimit: 30 }));
  });
  afterAll(() => capped.close());
  beforeEach(() => cappedAdmin.reset());

  const asked = async () =>
    (await cappedAdmin.serviceRequests()).map((r) => [
      new URL(r.path, 'http://x').searchParams.get('limit'),
      r.status,
    ]);

  it('is halved until the service takes it, and the walk goes on with the half', async () => {
    const refused: [number, number, string][] = [];
    const seen: string[] = [];
    for await (const item of cappedClient.relationships.iterate(
      { fields: 'relationship_id', limit: 100 },
      {
        onPageSizeRefused: (size, next, error) =>
          refused.push([size, next, error.items.map((i) => i.msg).join()]),
      },
    )) {
      seen.push(item.relationship_id ?? '');
    }
    expect(seen).toHaveLength(120);
    expect(new Set(seen).size).toBe(120);
    expect(refused).toEqual([
      [100, 50, 'Input should be less than or equal to 30'],
      [50, 25, 'Input should be less than or equal to 30'],
    ]);
    expect(await asked()).toEqual([
      ['100', 422],
      ['50', 422],
      ['25', 200],
      ['25', 200],
      ['25', 200],
      ['25', 200],
      ['25', 200],
    ]);
  });

  it('is not halved for a 422 about anything else', async () => {
    const walk = cappedClient.relationships.iterate({ sort: 'relationship_id:asc', limit: 100 });
    const error = await walk.next().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(ServiceValidationError);
    expect((error as ServiceValidationError).items.map((i) => i.loc)).toEqual([
      ['query', 'limit'],
      ['query', 'sort'],
    ]);
    expect(await asked()).toEqual([['100', 422]]);
  });
});

describe('headers', () => {
  it('sends user-agent, a UUID x-request-id, JSON content-type on bodies, and no key in the log', async () => {
    await client.prevent.registerPatient('hospital-patient-0002');
    await client.relationships.list({ limit: 1 });
    const [post, get] = await admin.serviceRequests();
    for (const entry of [post, get]) {
      expect(entry?.headers['user-agent']).toMatch(/^concordance-worker\/\d+\.\d+\.\d+/);
      expect(entry?.headers['x-request-id']).toMatch(UUID);
      expect(entry?.headers['x-api-key']).toBeUndefined();
    }
    expect(post?.headers['content-type']).toMatch(/^application\/json/);
    expect(post?.headers['x-request-id']).not.toBe(get?.headers['x-request-id']);
  });

  it('uses a configured user agent', async () => {
    const custom = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      userAgent: 'cw-test/9',
    });
    await custom.relationships.list({ limit: 1 });
    expect((await admin.serviceRequests())[0]?.headers['user-agent']).toBe('cw-test/9');
  });

  it('sends the API key: the right one is accepted where a wrong one is refused', async () => {
    const wrong = createServiceClient({ baseUrl: simulator.url, apiKey: 'wrong-key' });
    await expect(wrong.relationships.list({ limit: 1 })).rejects.toMatchObject({
      code: 'ERR_SERVICE_AUTH',
    });
    await expect(client.relationships.list({ limit: 1 })).resolves.toMatchObject({
      data: [expect.any(Object)],
    });
  });

  it('reports every attempt to onResponse under its route template', async () => {
    const hooks = recordingHooks();
    const observed = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      onResponse: hooks.onResponse,
    });
    const { jobId } = await observed.concordance.submit({
      assembled_patient: samplePatient,
      ccsr_category: SAMPLE_CATEGORY,
    });
    await observed.concordance.get(jobId);
    await observed.relationships.get('missing-id').catch(() => undefined);
    expect(
      hooks.responses.map(({ endpoint, method, status }) => ({ endpoint, method, status })),
    ).toEqual([
      { endpoint: 'POST /v1/concordance', method: 'POST', status: expect.any(Number) },
      { endpoint: 'GET /v1/concordance/{job_id}', method: 'GET', status: 200 },
      { endpoint: 'GET /v1/relationships/{relationship_id}', method: 'GET', status: 404 },
    ]);
    for (const r of hooks.responses) expect(r.durationMs).toBeGreaterThanOrEqual(0);
  });
});
