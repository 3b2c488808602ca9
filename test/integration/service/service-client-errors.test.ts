import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient } from '../../../src/service/create-service-client.ts';
import { ServiceAuthError } from '../../../src/service/errors/service-auth-error.ts';
import { ServiceBadResponseError } from '../../../src/service/errors/service-bad-response-error.ts';
import { ServiceError } from '../../../src/service/errors/service-error.ts';
import { ServiceNotFoundError } from '../../../src/service/errors/service-not-found-error.ts';
import { ServiceParamsError } from '../../../src/service/errors/service-params-error.ts';
import { ServiceRateLimitedError } from '../../../src/service/errors/service-rate-limited-error.ts';
import { ServiceTimeoutError } from '../../../src/service/errors/service-timeout-error.ts';
import { ServiceUnavailableError } from '../../../src/service/errors/service-unavailable-error.ts';
import { ServiceValidationError } from '../../../src/service/errors/service-validation-error.ts';
import { startSimulator, type RunningSimulator } from '../../../src/simulator/start-simulator.ts';
import { startHeaderStrippingProxy } from '../../support/header-stripping-proxy.ts';
import { recordingHooks, recordingSleep } from './support/recorders.ts';
import { SAMPLE_CATEGORY, samplePatient } from '../../support/sample-patient.ts';
import { SimulatorAdmin } from './support/simulator-admin.ts';

const API_KEY = 'test-key';
const OTHER_KEY = 'other-key-with-a-long-secret-value';

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

/** A client that never waits between retries, so failures surface without delay. */
function clientWith(options: Partial<Parameters<typeof createServiceClient>[0]> = {}) {
  return createServiceClient({
    baseUrl: simulator.url,
    apiKey: API_KEY,
    sleep: recordingSleep().sleep,
    ...options,
  });
}

async function caught(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError);
    return error as ServiceError;
  }
  throw new Error('expected the call to fail');
}

/** Nothing that could carry the key or a body shows up in what gets logged. */
function expectRedacted(error: ServiceError, ...secrets: string[]): void {
  const rendered = [error.message, JSON.stringify(error), inspect(error, { depth: 10 })];
  for (const text of rendered) {
    for (const secret of [API_KEY, OTHER_KEY, ...secrets]) expect(text).not.toContain(secret);
  }
}

describe('service errors', () => {
  it('403 for a wrong key is ServiceAuthError', async () => {
    const error = await caught(clientWith({ apiKey: OTHER_KEY }).relationships.list());
    expect(error).toBeInstanceOf(ServiceAuthError);
    expect(error).toMatchObject({
      code: 'ERR_SERVICE_AUTH',
      status: 403,
      endpoint: 'GET /v1/relationships',
    });
    expectRedacted(error);
    // Refused keys are not retried.
    expect(await admin.serviceRequests()).toHaveLength(1);
  });

  it('401 when the key does not arrive is ServiceAuthError', async () => {
    const proxy = await startHeaderStrippingProxy(simulator.url, ['x-api-key']);
    try {
      const error = await caught(clientWith({ baseUrl: proxy.url }).relationships.get('any'));
      expect(error).toBeInstanceOf(ServiceAuthError);
      expect(error).toMatchObject({ code: 'ERR_SERVICE_AUTH', status: 401 });
      expectRedacted(error);
    } finally {
      await proxy.close();
    }
  });

  it('404 is ServiceNotFoundError with status, endpoint and request id', async () => {
    const error = await caught(clientWith().relationships.get('does-not-exist'));
    expect(error).toBeInstanceOf(ServiceNotFoundError);
    expect(error).toMatchObject({
      code: 'ERR_SERVICE_NOT_FOUND',
      status: 404,
      endpoint: 'GET /v1/relationships/{relationship_id}',
    });
    const [logged] = await admin.serviceRequests();
    expect(error.requestId).toBe(logged?.headers['x-request-id']);
    expect(error.message).not.toContain('does-not-exist');
  });

  it('422 is ServiceValidationError with the items of the body', async () => {
    const error = await caught(clientWith().relationships.list({ sort: 'relationship_id:asc' }));
    expect(error).toBeInstanceOf(ServiceValidationError);
    expect(error).toMatchObject({ code: 'ERR_SERVICE_VALIDATION', status: 422 });
    const { items } = error as ServiceValidationError;
    expect(items.length).toBeGreaterThan(0);
    expect(items[0]).toEqual({
      loc: expect.any(Array),
      msg: expect.any(String),
      type: expect.any(String),
    });
    expect(items.map((i) => i.loc.join('.'))).toContain('query.sort');
  });

  it('429 is ServiceRateLimitedError carrying Retry-After in ms', async () => {
    await admin.setFaults({
      routes: { 'GET /v1/relationships': { rate_limit_rate: 1, retry_after_s: 7 } },
    });
    const error = await caught(clientWith({ retry: { limit: 0 } }).relationships.list());
    expect(error).toBeInstanceOf(ServiceRateLimitedError);
    expect(error).toMatchObject({
      code: 'ERR_SERVICE_RATE_LIMITED',
      status: 429,
      retryAfterMs: 7000,
    });
    expect(error.toJSON()).toMatchObject({ retryAfterMs: 7000 });
  });

  it('5xx is ServiceUnavailableError; a 500 is not retried', async () => {
    await admin.setFaults({
      routes: { 'GET /v1/relationships/:relationship_id': { error_rate: 1, error_status: 500 } },
    });
    const error = await caught(clientWith().relationships.get('any'));
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ code: 'ERR_SERVICE_UNAVAILABLE', status: 500 });
    expect(await admin.serviceRequests()).toHaveLength(1);
  });

  it('a closed port is ServiceUnavailableError with a sanitised cause, retried for GETs', async () => {
    const port = await closedPort();
    const hooks = recordingHooks();
    const recorder = recordingSleep();
    const client = createServiceClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: OTHER_KEY,
      sleep: recorder.sleep,
      onResponse: hooks.onResponse,
    });
    const error = await caught(client.relationships.list());
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error.status).toBeUndefined();
    expect(error.cause).toMatchObject({ code: 'ECONNREFUSED' });
    expect(hooks.responses.map((r) => r.status)).toEqual([
      'network',
      'network',
      'network',
      'network',
    ]);
    // Each attempt names the host (no path, no key) and the network error's code.
    for (const r of hooks.responses) {
      expect(r).toMatchObject({ host: `127.0.0.1:${port}`, code: 'ECONNREFUSED' });
    }
    expect(recorder.delays).toHaveLength(3);
    expectRedacted(error);

    // A POST to the same closed port is tried exactly once.
    const post = await caught(client.prevent.registerPatient('hospital-patient-0009'));
    expect(post).toBeInstanceOf(ServiceUnavailableError);
    expect(hooks.responses).toHaveLength(5);
    expectRedacted(post, 'hospital-patient-0009');
  });

  it('a hanging answer is ServiceTimeoutError after timeoutMs', async () => {
    await admin.setFaults({
      routes: { 'GET /v1/relationships/:relationship_id': { hang_rate: 1 } },
    });
    const hooks = recordingHooks();
    const error = await caught(
      clientWith({
        timeoutMs: 150,
        retry: { limit: 1 },
        onResponse: hooks.onResponse,
      }).relationships.get('x'),
    );
    expect(error).toBeInstanceOf(ServiceTimeoutError);
    expect(error).toMatchObject({ code: 'ERR_SERVICE_TIMEOUT', status: undefined });
    expect(hooks.responses.map((r) => r.status)).toEqual(['timeout', 'timeout']);
  });

  it.each(['invalid_json', 'wrong_shape'] as const)(
    'a malformed body (%s) is ServiceBadResponseError without its content',
    async (malformed_body) => {
      await admin.setFaults({
        routes: { 'GET /v1/relationships': { malformed_rate: 1, malformed_body } },
      });
      const error = await caught(clientWith().relationships.list());
      expect(error).toBeInstanceOf(ServiceBadResponseError);
      expect(error).toMatchObject({ code: 'ERR_SERVICE_BAD_RESPONSE', status: 200 });
      // Not retried: the same GET would most likely get the same answer.
      expect(await admin.serviceRequests()).toHaveLength(1);
    },
  );

  it('a malformed submission answer is ServiceBadResponseError too', async () => {
    await admin.setFaults({ routes: { 'POST /v1/concordance': { malformed_rate: 1 } } });
    const error = await caught(
      clientWith().concordance.submit({
        assembled_patient: samplePatient,
        ccsr_category: SAMPLE_CATEGORY,
      }),
    );
    expect(error).toBeInstanceOf(ServiceBadResponseError);
    expectRedacted(error, 'Diabetes', '44054006');
  });

  it.each([
    ['offset -1', { offset: -1 }],
    ['offset 1.5', { offset: 1.5 }],
    ['limit 0', { limit: 0 }],
    ['limit 2.5', { limit: 2.5 }],
  ])(
    'params are checked before sending (%s): ServiceParamsError, no request',
    async (_n, params) => {
      const client = clientWith();
      const error = await caught(client.relationships.list(params));
      expect(error).toBeInstanceOf(ServiceParamsError);
      expect(error.code).toBe('ERR_SERVICE_PARAMS');
      await expect(client.relationships.iterate(params).next()).rejects.toBeInstanceOf(
        ServiceParamsError,
      );
      expect(await admin.serviceRequests()).toEqual([]);
    },
  );

  it('a body that breaks the interface is refused before sending, naming paths only', async () => {
    const broken = { ...samplePatient, demographics: { age: 130 } };
    const error = await caught(
      clientWith().concordance.submit({
        assembled_patient: broken,
        ccsr_category: SAMPLE_CATEGORY,
      }),
    );
    expect(error).toBeInstanceOf(ServiceParamsError);
    expect(error.message).toContain('assembled_patient.demographics.age');
    expect(error.message).not.toContain('130');
    expect(await admin.serviceRequests()).toEqual([]);
  });
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
