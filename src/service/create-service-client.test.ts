import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClientOptions } from './create-service-client.ts';
import { ServiceBadResponseError } from './errors/service-bad-response-error.ts';
import { ServiceRequestError } from './errors/service-request-error.ts';
import { ServiceValidationError } from './errors/service-validation-error.ts';

/**
 * Answers the simulator cannot be made to give (a missing total, other submission shapes, 504,
 * Retry-After on 503, a redirect), from a scripted raw HTTP server.
 */
interface Reply {
  status: number;
  body?: string | Buffer;
  headers?: Record<string, string>;
}
let replies: Reply[] = [];
let seen: { method: string; url: string; acceptEncoding: string | undefined }[] = [];
let baseUrl: string;

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  seen.push({
    method: req.method ?? '',
    url: req.url ?? '',
    acceptEncoding: req.headers['accept-encoding'],
  });
  const reply = replies.shift() ?? { status: 500, body: '{"detail":"script exhausted"}' };
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  res.end(reply.body ?? '');
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);
beforeEach(() => {
  replies = [];
  seen = [];
});

const delays: number[] = [];
const client = (options: Partial<ServiceClientOptions> = {}) =>
  createServiceClient({
    baseUrl,
    apiKey: 'unit-key',
    sleep: async (ms) => {
      delays.push(ms);
    },
    ...options,
  });
const json = (status: number, value: unknown, headers?: Record<string, string>): Reply => ({
  status,
  body: JSON.stringify(value),
  ...(headers && { headers }),
});
const relationship = { relationship_id: 'r1', from_concept: {}, to_concept: {} };

describe('relationships.list total', () => {
  it('is a bad response when asked for and missing', async () => {
    replies = [json(200, { data: [relationship] })];
    const error = await client()
      .relationships.list({ include_total: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceBadResponseError);
    expect((error as Error).message).toMatch(/total/);
  });

  it('is tolerated when sent unasked', async () => {
    replies = [json(200, { data: [relationship], total: 7 })];
    await expect(client().relationships.list()).resolves.toEqual({
      data: [relationship],
      total: 7,
    });
  });

  it('must be a non-negative integer', async () => {
    replies = [json(200, { data: [], total: 1.5 })];
    const error = await client()
      .relationships.list({ include_total: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceBadResponseError);
    expect((error as Error).message).toContain('total');
  });

  it('requires whole relationships without a projection, partial ones with it', async () => {
    replies = [json(200, { data: [{ relationship_id: 'r1' }] })];
    await expect(client().relationships.list()).rejects.toBeInstanceOf(ServiceBadResponseError);
    replies = [json(200, { data: [{ relationship_id: 'r1' }] })];
    await expect(client().relationships.list({ fields: ['relationship_id'] })).resolves.toEqual({
      data: [{ relationship_id: 'r1' }],
    });
  });

  it('checks documented types and keeps unknown fields', async () => {
    const item = { ...relationship, metadata: { num_studies: 2.5 }, extra: 'kept' };
    replies = [json(200, { data: [item] })];
    const error = await client()
      .relationships.list()
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('data.0.metadata.num_studies');
    replies = [json(200, { data: [{ ...relationship, extra: 'kept' }] })];
    expect((await client().relationships.list()).data[0]).toMatchObject({ extra: 'kept' });
  });
});

describe('concordance.submit answers', () => {
  const req = {
    assembled_patient: { nodes: [], relationships: [], demographics: { age: 40 } },
    ccsr_category: 'END002',
  };

  it.each<[string, Reply]>([
    ['a bare JSON string', json(200, 'job-a')],
    ['{job_id} with 202', json(202, { job_id: 'job-a' })],
    ['{id} with 201', json(201, { id: 'job-a' })],
  ])('accepts %s', async (_name, reply) => {
    replies = [reply];
    await expect(client().concordance.submit(req)).resolves.toEqual({ jobId: 'job-a' });
  });

  it('refuses an answer without a job id', async () => {
    replies = [json(202, { accepted: true })];
    await expect(client().concordance.submit(req)).rejects.toBeInstanceOf(ServiceBadResponseError);
  });
});

describe('retries the simulator cannot provoke', () => {
  it('retries a 504 GET', async () => {
    replies = [json(504, {}), json(200, { status: 'done', concordance: null })];
    await expect(client().concordance.get('j1')).resolves.toMatchObject({ state: 'success' });
    expect(seen).toHaveLength(2);
  });

  it('honours Retry-After on a 503 too', async () => {
    delays.length = 0;
    replies = [json(503, {}, { 'retry-after': '4' }), json(200, { status: 'queued' })];
    await expect(client().concordance.get('j1')).resolves.toMatchObject({ state: 'pending' });
    expect(delays).toEqual([4000]);
  });

  it('passes on the Retry-After of a pending answer (the next poll waits for it), and none without', async () => {
    replies = [
      json(200, { status: 'queued' }, { 'retry-after': '7' }),
      json(200, { status: 'queued' }),
    ];
    const hinted = await client().concordance.get('j1');
    expect(hinted).toMatchObject({ state: 'pending', retryAfterMs: 7_000 });
    const plain = await client().concordance.get('j1');
    expect(plain.retryAfterMs).toBeUndefined();
  });
});

describe('other answers', () => {
  it('does not follow a redirect (the key would go along)', async () => {
    replies = [{ status: 307, headers: { location: 'http://example.invalid/x' } }];
    await expect(client().relationships.get('r1')).rejects.toBeInstanceOf(ServiceBadResponseError);
    expect(seen).toHaveLength(1);
  });

  it('maps 413 to ServiceRequestError', async () => {
    replies = [json(413, { detail: 'too large' })];
    await expect(client().prevent.registerPatient('p-1')).rejects.toBeInstanceOf(
      ServiceRequestError,
    );
  });

  it('leaves the content of a non-JSON body out of the error', async () => {
    replies = [{ status: 200, body: 'PATIENT-SECRET <html>' }];
    const error = await client()
      .relationships.get('r1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceBadResponseError);
    expect(JSON.stringify(error)).not.toContain('PATIENT-SECRET');
    expect(String(error)).not.toContain('PATIENT-SECRET');
    expect((error as Error).cause).toBeUndefined();
  });

  it('URL-encodes ids into the path and fills the recommend template', async () => {
    replies = [json(200, relationship), json(200, {})];
    await client().relationships.get('a/b c');
    await client({
      preventPaths: { recommend: '/prevent/{patient_service_id}/run' },
    }).prevent.recommend({
      patient_service_id: 'svc/1',
      patient_biomarkers: {},
      patient_history: {},
      patient_demographics: {},
    });
    expect(seen.map((s) => s.url)).toEqual(['/v1/relationships/a%2Fb%20c', '/prevent/svc%2F1/run']);
  });
});

describe('compressed answers', () => {
  it('asks for them and reads them, an error answer included', async () => {
    replies = [
      {
        status: 200,
        body: gzipSync(JSON.stringify({ data: [relationship] })),
        headers: { 'content-encoding': 'gzip' },
      },
      {
        status: 422,
        body: brotliCompressSync(
          JSON.stringify({ detail: [{ loc: ['query', 'sort'], msg: 'no', type: 'value_error' }] }),
        ),
        headers: { 'content-encoding': 'br' },
      },
    ];
    await expect(client().relationships.list()).resolves.toEqual({ data: [relationship] });
    const error = await client()
      .relationships.list({ sort: 'x' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceValidationError);
    expect((error as ServiceValidationError).items).toEqual([
      { loc: ['query', 'sort'], msg: 'no', type: 'value_error' },
    ]);
    expect(seen.map((s) => s.acceptEncoding)).toEqual([
      'gzip, deflate, br, zstd',
      'gzip, deflate, br, zstd',
    ]);
  });
});

describe('the retry debug log', () => {
  const retried = async (isLevelEnabled?: (level: string) => boolean) => {
    const debug: unknown[] = [];
    replies = [json(503, {}), json(200, { status: 'queued' })];
    await client({
      logger: { warn: () => undefined, debug: (obj) => debug.push(obj), isLevelEnabled },
    }).concordance.get('j1');
    return debug;
  };

  it('is written when the debug level is on, or when the logger cannot tell', async () => {
    for (const debug of [await retried(() => true), await retried(undefined)]) {
      expect(debug).toEqual([
        expect.objectContaining({
          endpoint: 'GET /v1/concordance/{job_id}',
          status: 503,
          retry: 1,
        }),
      ]);
    }
  });

  it('is not even built when the debug level is off', async () => {
    const asked: string[] = [];
    const debug = await retried((level) => {
      asked.push(level);
      return false;
    });
    expect(debug).toEqual([]);
    expect(asked).toEqual(['debug']);
  });
});

describe('options', () => {
  it.each<[string, Partial<ServiceClientOptions>]>([
    ['a relative baseUrl', { baseUrl: '/v1' }],
    ['an ftp baseUrl', { baseUrl: 'ftp://x' }],
    ['an empty apiKey', { apiKey: '' }],
    ['a zero timeout', { timeoutMs: 0 }],
    ['a negative retry limit', { retry: { limit: -1 } }],
    ['a fractional retry limit', { retry: { limit: 1.5 } }],
    ['an unknown path placeholder', { preventPaths: { recommend: '/p/{id}' } }],
    ['a relative prevent path', { preventPaths: { register: 'v1/patient' } }],
    ['a status in two sets', { statuses: { lost: ['failed'] } }],
  ])('refuses %s', (_name, options) => {
    expect(() => client(options)).toThrow(TypeError);
  });

  it('never puts the API key in an option error', () => {
    expect(() => client({ apiKey: 'SECRET-KEY', baseUrl: 'nope' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('SECRET-KEY') }),
    );
  });
});
