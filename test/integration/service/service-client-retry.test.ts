import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient } from '../../../src/service/create-service-client.ts';
import { ServiceRateLimitedError } from '../../../src/service/errors/service-rate-limited-error.ts';
import { ServiceTimeoutError } from '../../../src/service/errors/service-timeout-error.ts';
import { ServiceUnavailableError } from '../../../src/service/errors/service-unavailable-error.ts';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import { recordingHooks, recordingSleep } from './support/recorders.ts';
import { SAMPLE_CATEGORY, samplePatient } from '../../support/sample-patient.ts';
import { SimulatorAdmin } from './support/simulator-admin.ts';

const API_KEY = 'test-key';

let simulator: RunningSimulator;
let admin: SimulatorAdmin;

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    apiKeys: [API_KEY],
    latency: { minMs: 0, maxMs: 0 },
  });
  admin = new SimulatorAdmin(simulator.url, API_KEY);
});
afterAll(() => simulator.close());
beforeEach(() => admin.reset());

const submission = { assembled_patient: samplePatient, ccsr_category: SAMPLE_CATEGORY };

describe('GET retries', () => {
  it.each([502, 503] as const)(
    'retries %i twice, then succeeds with one request id',
    async (status) => {
      await admin.setFaults({
        routes: { 'GET /v1/relationships': { error_rate: 1, error_status: status, times: 2 } },
      });
      const recorder = recordingSleep();
      const client = createServiceClient({
        baseUrl: simulator.url,
        apiKey: API_KEY,
        sleep: recorder.sleep,
      });

      const page = await client.relationships.list({ limit: 2 });
      expect(page.data).toHaveLength(2);

      const log = await admin.serviceRequests();
      expect(log.map((r) => r.status)).toEqual([status, status, 200]);
      // Every attempt of the one call carries the same x-request-id.
      expect(new Set(log.map((r) => r.headers['x-request-id'])).size).toBe(1);
      // Capped exponential backoff with equal jitter: [125, 250] then [250, 500] ms.
      expect(recorder.delays).toHaveLength(2);
      expect(recorder.delays[0]).toBeGreaterThanOrEqual(125);
      expect(recorder.delays[0]).toBeLessThanOrEqual(250);
      expect(recorder.delays[1]).toBeGreaterThanOrEqual(250);
      expect(recorder.delays[1]).toBeLessThanOrEqual(500);
    },
  );

  it('gives up after retry.limit retries with the last error', async () => {
    await admin.setFaults({ routes: { 'GET /v1/concordance/:job_id': { error_rate: 1 } } });
    const recorder = recordingSleep();
    const client = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      sleep: recorder.sleep,
      retry: { limit: 2, baseDelayMs: 100, maxDelayMs: 150 },
    });
    await expect(client.concordance.get('job-1')).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(await admin.serviceRequests()).toHaveLength(3);
    // The second step (200 ms) is capped at maxDelayMs.
    expect(recorder.delays[1]).toBeLessThanOrEqual(150);
  });

  it('retries a timed-out GET and then succeeds', async () => {
    await admin.setFaults({
      routes: { 'GET /v1/relationships/:relationship_id': { hang_rate: 1, times: 1 } },
    });
    const client = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      sleep: recordingSleep().sleep,
    });
    const [first] = (await client.relationships.list({ limit: 1 })).data;
    await admin.reset();
    await admin.setFaults({
      routes: { 'GET /v1/relationships/:relationship_id': { hang_rate: 1, times: 1 } },
    });
    const hooks = recordingHooks();
    const quick = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      timeoutMs: 200,
      sleep: recordingSleep().sleep,
      onResponse: hooks.onResponse,
    });
    const one = await quick.relationships.get(first?.relationship_id ?? '');
    expect(one.relationship_id).toBe(first?.relationship_id);
    expect(hooks.responses.map((r) => r.status)).toEqual(['timeout', 200]);
  });
});

describe('Retry-After', () => {
  /** A backoff so long that a short recorded delay can only have come from Retry-After. */
  const slowBackoff = { baseDelayMs: 50_000, maxDelayMs: 50_000 };

  it('waits the seconds given in Retry-After, then retries', async () => {
    await admin.setFaults({
      routes: { 'GET /v1/relationships': { rate_limit_rate: 1, retry_after_s: 1, times: 1 } },
    });
    // Records, then really waits, as the default sleep does.
    const recorder = recordingSleep((ms) => new Promise((r) => setTimeout(r, ms)));
    const client = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      retry: slowBackoff,
      sleep: recorder.sleep,
    });
    await expect(client.relationships.list({ limit: 1 })).resolves.toMatchObject({
      data: [expect.any(Object)],
    });
    expect(recorder.delays).toEqual([1000]);
    expect((await admin.serviceRequests()).map((r) => r.status)).toEqual([429, 200]);
  });

  it('reads an HTTP-date Retry-After', async () => {
    await admin.setFaults({
      routes: {
        'GET /v1/relationships': {
          rate_limit_rate: 1,
          retry_after_s: 3,
          retry_after_format: 'http-date',
          times: 1,
        },
      },
    });
    const recorder = recordingSleep();
    const client = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      retry: slowBackoff,
      sleep: recorder.sleep,
    });
    await client.relationships.list({ limit: 1 });
    expect(recorder.delays).toHaveLength(1);
    // A date has whole-second precision: "now + 3 s" reads back as just over 2 to 3 seconds.
    expect(recorder.delays[0]).toBeGreaterThanOrEqual(1000);
    expect(recorder.delays[0]).toBeLessThanOrEqual(3000);
  });

  it('surfaces a Retry-After longer than maxRetryAfterMs at once', async () => {
    await admin.setFaults({
      routes: { 'GET /v1/relationships': { rate_limit_rate: 1, retry_after_s: 120 } },
    });
    const recorder = recordingSleep();
    const client = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      sleep: recorder.sleep,
    });
    const error = await client.relationships.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceRateLimitedError);
    expect(error).toMatchObject({ retryAfterMs: 120_000 });
    expect(recorder.delays).toEqual([]);
    expect(await admin.serviceRequests()).toHaveLength(1);
  });
});

describe('POST is never retried', () => {
  let recorder = recordingSleep();
  beforeEach(() => {
    recorder = recordingSleep();
  });
  afterEach(() => {
    // Not even a wait was asked for.
    expect(recorder.delays).toEqual([]);
  });
  const client = () =>
    createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      sleep: recorder.sleep,
      timeoutMs: 200,
    });

  it('a 503 on submit surfaces after exactly one request', async () => {
    await admin.setFaults({
      routes: { 'POST /v1/concordance': { error_rate: 1, error_status: 503 } },
    });
    await expect(client().concordance.submit(submission)).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
    expect((await admin.serviceRequests()).map((r) => `${r.method} ${r.status}`)).toEqual([
      'POST 503',
    ]);
  });

  it('a 429 on submit surfaces after exactly one request', async () => {
    await admin.setFaults({ routes: { 'POST /v1/concordance': { rate_limit_rate: 1 } } });
    await expect(client().concordance.submit(submission)).rejects.toBeInstanceOf(
      ServiceRateLimitedError,
    );
    expect(await admin.serviceRequests()).toHaveLength(1);
  });

  it('a hanging submit times out after exactly one request', async () => {
    await admin.setFaults({ routes: { 'POST /v1/concordance': { hang_rate: 1 } } });
    await expect(client().concordance.submit(submission)).rejects.toBeInstanceOf(
      ServiceTimeoutError,
    );
    // One request, still unanswered (status null) when the client gave up on it.
    expect(
      (await admin.serviceRequests()).map((r) => ({ method: r.method, status: r.status })),
    ).toEqual([{ method: 'POST', status: null }]);
  });

  it('a 503 on the Prevent endpoints surfaces after exactly one request each', async () => {
    await admin.setFaults({ routes: { '*': { error_rate: 1 } } });
    const c = client();
    await expect(c.prevent.registerPatient('hospital-patient-0003')).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
    await expect(
      c.prevent.recommend({
        patient_service_id: 'svc-1',
        patient_biomarkers: {},
        patient_history: {},
        patient_demographics: {},
      }),
    ).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect((await admin.serviceRequests()).map((r) => r.path)).toEqual([
      '/v1/patient',
      '/v1/patient/svc-1',
    ]);
  });
});

describe('abort', () => {
  it('an aborted signal stops the call before sending', async () => {
    const client = createServiceClient({ baseUrl: simulator.url, apiKey: API_KEY });
    const reason = new Error('shutting down');
    await expect(
      client.concordance.get('job-1', { signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
    expect(await admin.serviceRequests()).toEqual([]);
  });

  it('an abort while the answer is outstanding ends the call with the reason, unretried', async () => {
    await admin.setFaults({ routes: { 'GET /v1/concordance/:job_id': { hang_rate: 1 } } });
    const controller = new AbortController();
    const reason = new Error('worker shutting down');
    const recorder = recordingSleep();
    const client = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      sleep: recorder.sleep,
    });
    const call = client.concordance.get('job-1', { signal: controller.signal });
    // Abort once the simulator holds the request (the log is the synchronisation point).
    while ((await admin.serviceRequests()).length === 0);
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    expect(recorder.delays).toEqual([]);
    expect(await admin.serviceRequests()).toHaveLength(1);
  });

  it('an abort during the wait between retries ends the call with the reason', async () => {
    await admin.setFaults({ routes: { 'GET /v1/concordance/:job_id': { error_rate: 1 } } });
    const controller = new AbortController();
    const reason = new Error('job cancelled');
    const client = createServiceClient({
      baseUrl: simulator.url,
      apiKey: API_KEY,
      sleep: async () => controller.abort(reason),
    });
    await expect(client.concordance.get('job-1', { signal: controller.signal })).rejects.toBe(
      reason,
    );
    expect(await admin.serviceRequests()).toHaveLength(1);
  });
});
