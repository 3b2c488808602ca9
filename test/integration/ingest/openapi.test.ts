import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { OpenAPIV3_1 } from 'openapi-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_REST_HOOK } from '../../../src/ingest/openapi/request-examples.ts';
import { formatOpenApi, OPENAPI_FILE } from '../../../tools/write-openapi.ts';
import { AUTH, startHarness, TOKEN, type Harness } from './support/ingest-harness.ts';
import {
  bodyExamplesOf,
  nameOf,
  operationsOf,
  ResponseChecker,
  responseOf,
  schemeOf,
  urlOf,
  type Operation,
} from './support/openapi-operations.ts';

const ADMIN_TOKEN = 'admin-openapi-token-0123456789';
const TOKENS: Record<string, string> = { ingestToken: TOKEN, adminToken: ADMIN_TOKEN };

/**
 * Every route the ingest app serves, as `METHOD /path`, from fastify's route tree: each line is a
 * node (`├── /suffix (GET, HEAD)`), its path the parent's plus its suffix, four columns a level.
 */
function servedRoutes(h: Harness): string[] {
  const routes: string[] = [];
  const paths: string[] = [];
  for (const line of h.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^(.*?)[├└]── (\S+)(?: \(([A-Z, -]+)\))?$/.exec(line);
    if (match === null) continue;
    const depth = (match[1] as string).length / 4;
    const path = (paths[depth - 1] ?? '') + (match[2] as string);
    paths[depth] = path;
    for (const method of (match[3] ?? '').split(', ')) {
      if (/^[A-Z]+$/.test(method) && method !== 'HEAD') routes.push(`${method} ${path}`);
    }
  }
  return routes.sort();
}

let h: Harness;
let document: OpenAPIV3_1.Document;
let operations: Operation[];

beforeAll(async () => {
  h = await startHarness({
    adminTokens: [ADMIN_TOKEN],
    restHooks: [
      {
        name: EXAMPLE_REST_HOOK,
        criteria: 'Condition?category=problem-list-item',
        first_lookback_s: 86_400,
        overlap_s: 300,
      },
    ],
  });
  const res = await h.app.inject({ method: 'GET', url: '/openapi.json', headers: AUTH });
  expect(res.statusCode).toBe(200);
  document = res.json<OpenAPIV3_1.Document>();
  operations = operationsOf(document);
});
afterAll(async () => {
  await h?.close();
});

describe('the OpenAPI description the ingest app serves at /openapi.json', () => {
  it('is the checked-in docs/openapi.json', async () => {
    const checkedIn = await readFile(OPENAPI_FILE, 'utf8');
    expect(
      await formatOpenApi(document),
      'docs/openapi.json differs from what the ingest app serves: run `npm run openapi`',
    ).toBe(checkedIn);
  });

  it('is a valid OpenAPI 3.1 document whose references all resolve', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(() => validator.resolveRefs()).not.toThrow();
  });

  it('describes every route the app serves, and no other', () => {
    const described = operations
      .map(({ method, path }) => `${method} ${path.replace(/\{(\w+)\}/g, ':$1')}`)
      .sort();
    expect(described).toEqual(servedRoutes(h));
    expect(new Set(operations.map((op) => op.operation.operationId)).size).toBe(operations.length);
  });

  it('takes an ingest token', async () => {
    for (const headers of [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }]) {
      const res = await h.app.inject({ method: 'GET', url: '/openapi.json', headers });
      expect(res.statusCode).toBe(401);
    }
  });
});

/**
 * Each operation's documented example, in the document's order (a walk through the API: the record
 * update makes the patient the later examples name), sent to the real app on real Redis with the
 * token its security names. Each must succeed (2xx) with a documented status, media type, headers
 * and body.
 */
describe('every documented example, sent to the app', () => {
  it('is answered with a documented success', async () => {
    const checker = new ResponseChecker(document);
    const sent: string[] = [];
    for (const op of operations) {
      const scheme = schemeOf(document, op);
      const auth = scheme === undefined ? {} : { authorization: `Bearer ${TOKENS[scheme]}` };
      const bodies = bodyExamplesOf(op);
      const requests = bodies.length === 0 ? [undefined] : bodies;
      for (const body of requests) {
        const res = await h.app.inject({
          method: op.method,
          url: urlOf(op),
          headers: body === undefined ? auth : { ...auth, 'content-type': body.type },
          ...(body === undefined ? {} : { payload: body.payload }),
        });
        const what = `${nameOf(op)}${body === undefined ? '' : ` as ${body.type}`}: ${res.statusCode} ${res.body.slice(0, 500)}`;
        expect(res.statusCode, what).toBeGreaterThanOrEqual(200);
        expect(res.statusCode, what).toBeLessThan(300);
        expect(checker.problems(op, res), what).toEqual([]);
        if (op.operation.operationId === 'postHl7v2') expect(res.body, what).toMatch(/\rMSA\|AA\|/);
        sent.push(nameOf(op));
      }
    }
    expect(new Set(sent).size).toBe(operations.length);
  });
});

/** What the description says of the answers the guards give: 401, 403 (and 503 below). */
describe('the documented refusals', () => {
  it('401 with WWW-Authenticate on every operation that takes a token, none on the others', async () => {
    const checker = new ResponseChecker(document);
    for (const op of operations) {
      const res = await h.app.inject({ method: op.method, url: urlOf(op) });
      const secured = schemeOf(document, op) !== undefined;
      expect(responseOf(op, 401) !== undefined, nameOf(op)).toBe(secured);
      if (!secured) {
        expect(res.statusCode, nameOf(op)).toBeLessThan(300);
        continue;
      }
      expect(res.statusCode, nameOf(op)).toBe(401);
      expect(checker.problems(op, res), nameOf(op)).toEqual([]);
    }
  });

  it('403 for an ingest token on the patient administration operations', async () => {
    const checker = new ResponseChecker(document);
    const admin = operations.filter((op) => schemeOf(document, op) === 'adminToken');
    expect(admin.map((op) => op.operation.operationId).sort()).toEqual([
      'optInPatient',
      'optOutPatient',
      'purgePatient',
      'traceMessage',
      'tracePatientMessages',
    ]);
    for (const op of admin) {
      const res = await h.app.inject({ method: op.method, url: urlOf(op), headers: AUTH });
      expect(res.statusCode, nameOf(op)).toBe(403);
      expect(checker.problems(op, res), nameOf(op)).toEqual([]);
    }
  });

  it('415 for a media type an operation with a body does not document', async () => {
    const checker = new ResponseChecker(document);
    for (const op of operations.filter((o) => o.operation.requestBody !== undefined)) {
      const scheme = schemeOf(document, op) as string;
      const res = await h.app.inject({
        method: op.method,
        url: urlOf(op),
        headers: {
          authorization: `Bearer ${TOKENS[scheme]}`,
          'content-type': 'application/xml',
        },
        payload: '<record/>',
      });
      expect(res.statusCode, nameOf(op)).toBe(415);
      expect(checker.problems(op, res), nameOf(op)).toEqual([]);
    }
  });

  it('422 {detail: [{loc, msg, type}]} for a path parameter outside its schema', async () => {
    const checker = new ResponseChecker(document);
    const invalid: Record<string, string> = {
      patient_id: 'x'.repeat(129),
      ccsr_category: 'XXX000',
      type: 'condition',
      id: 'not/an id',
      name: 'problems',
    };
    const withParams = operations.filter((op) => /\{(patient_id|type)\}/.test(op.path));
    expect(withParams.length).toBeGreaterThan(0);
    for (const op of withParams) {
      const scheme = schemeOf(document, op) as string;
      const res = await h.app.inject({
        method: op.method,
        url: urlOf(op, (p) => invalid[p.name]),
        headers: { authorization: `Bearer ${TOKENS[scheme]}` },
      });
      expect(res.statusCode, nameOf(op)).toBe(422);
      expect(checker.problems(op, res), nameOf(op)).toEqual([]);
      expect(res.json<{ detail: { loc: unknown[] }[] }>().detail[0]?.loc[0]).toBe('path');
    }
  });
  it('400 for a path that cannot be decoded, on every operation with path parameters', async () => {
    const checker = new ResponseChecker(document);
    const withParams = operations.filter((op) => op.path.includes('{'));
    for (const op of withParams) {
      const scheme = schemeOf(document, op) as string;
      const res = await h.app.inject({
        method: op.method,
        // The first parameter's bytes are no UTF-8: the router cannot decode them.
        url: urlOf({ ...op, path: op.path.replace(/\{\w+\}/, '%E0%A4%A') }),
        headers: { authorization: `Bearer ${TOKENS[scheme]}` },
      });
      expect(res.statusCode, nameOf(op)).toBe(400);
      expect(checker.problems(op, res), nameOf(op)).toEqual([]);
    }
  });
});

describe('before the process is ready', () => {
  let starting: Harness;
  beforeAll(async () => {
    starting = await startHarness({ adminTokens: [ADMIN_TOKEN], isReady: () => false });
  });
  afterAll(async () => {
    await starting?.close();
  });

  it('every operation documenting 503 answers it with Retry-After; the others answer', async () => {
    const checker = new ResponseChecker(document);
    for (const op of operations) {
      const scheme = schemeOf(document, op);
      const res = await starting.app.inject({
        method: op.method,
        url: urlOf(op),
        headers: scheme === undefined ? {} : { authorization: `Bearer ${TOKENS[scheme]}` },
      });
      if (responseOf(op, 503) === undefined) {
        expect(res.statusCode, nameOf(op)).toBe(200);
        continue;
      }
      expect(res.statusCode, nameOf(op)).toBe(503);
      expect(checker.problems(op, res), nameOf(op)).toEqual([]);
    }
  });
});

describe('with small body limits', () => {
  let small: Harness;
  beforeAll(async () => {
    small = await startHarness({
      adminTokens: [ADMIN_TOKEN],
      bodyLimitBytes: 64,
      batch: { max_items: 1, max_bytes: 64 },
      restHooks: [
        { name: EXAMPLE_REST_HOOK, criteria: 'Condition', first_lookback_s: 60, overlap_s: 0 },
      ],
    });
  });
  afterAll(async () => {
    await small?.close();
  });

  it('every operation documenting 413 answers it to its example', async () => {
    const checker = new ResponseChecker(document);
    const limited = operations.filter((op) => responseOf(op, 413) !== undefined);
    expect(limited.map((op) => op.operation.operationId)).toEqual(
      operations
        .filter((op) => op.operation.requestBody !== undefined)
        .map((op) => op.operation.operationId),
    );
    for (const op of limited) {
      for (const body of bodyExamplesOf(op)) {
        const scheme = schemeOf(document, op) ?? 'ingestToken';
        const res = await small.app.inject({
          method: op.method,
          url: urlOf(op),
          headers: { authorization: `Bearer ${TOKENS[scheme]}`, 'content-type': body.type },
          // Over the limit whatever the example (trailing blanks: still the same JSON).
          payload: body.payload.padEnd(65),
        });
        expect(res.statusCode, `${nameOf(op)} as ${body.type}`).toBe(413);
        expect(checker.problems(op, res), nameOf(op)).toEqual([]);
      }
    }
  });
});
