import { afterAll, describe, expect, it } from 'vitest';
import { RelationshipListSchema, RelationshipSchema } from '../../../src/interface/relationship.ts';
import { auth, call, testApp } from './simulator-fixtures.ts';

const app = testApp({ relationshipCount: 300 });
afterAll(() => app.close());
const list = (query: string) => call(app, { url: `/v1/relationships${query}`, headers: auth });
const ids = (body: unknown) =>
  (body as { data: { relationship_id: string }[] }).data.map((r) => r.relationship_id);

describe('GET /v1/relationships/{relationship_id}', () => {
  it('answers 200 with a relationship of the interface', async () => {
    const res = await call(app, { url: '/v1/relationships/rel-000007', headers: auth });
    expect(res.status).toBe(200);
    expect(RelationshipSchema.parse(res.body).relationship_id).toBe('rel-000007');
  });

  it('answers 404 to an unknown id', async () => {
    expect(await call(app, { url: '/v1/relationships/rel-999999', headers: auth })).toMatchObject({
      status: 404,
      body: { detail: 'Relationship not found' },
    });
  });

  it('answers 422 at path.relationship_id to an over-long id', async () => {
    const res = await call(app, { url: `/v1/relationships/${'r'.repeat(200)}`, headers: auth });
    expect(res).toMatchObject({
      status: 422,
      body: { detail: [{ loc: ['path', 'relationship_id'] }] },
    });
  });
});

describe('GET /v1/relationships', () => {
  it('answers the first 10 without total by default', async () => {
    const res = await list('');
    expect(res.status).toBe(200);
    const page = RelationshipListSchema.parse(res.body);
    expect(page.data).toHaveLength(10);
    expect(page.total).toBeUndefined();
    expect(res.body).not.toHaveProperty('total');
  });

  it('pages with offset/limit and adds total only with include_total=true', async () => {
    const first = await list('?limit=3&include_total=true');
    expect(ids(first.body)).toEqual(['rel-000001', 'rel-000002', 'rel-000003']);
    expect(first.body).toMatchObject({ total: 300 });
    const next = await list('?limit=3&offset=3&include_total=false');
    expect(ids(next.body)).toEqual(['rel-000004', 'rel-000005', 'rel-000006']);
    expect(next.body).not.toHaveProperty('total');
    expect(ids((await list('?offset=298&limit=1000')).body)).toEqual(['rel-000299', 'rel-000300']);
  });

  it('filters with OR on relationship_id', async () => {
    const res = await list(
      `?filter=${encodeURIComponent('relationship_id:rel-000250||relationship_id:rel-000002')}&include_total=true`,
    );
    expect(ids(res.body)).toEqual(['rel-000002', 'rel-000250']);
    expect(res.body).toMatchObject({ total: 2 });
  });

  it('searches a substring of relationship_id', async () => {
    const res = await list('?search=relationship_id:00012&include_total=true&limit=100');
    expect(ids(res.body)).toEqual([
      'rel-000012',
      ...Array.from({ length: 10 }, (_, i) => `rel-00012${i}`),
    ]);
    expect(res.body).toMatchObject({ total: 11 });
  });

  it('projects fields', async () => {
    const res = await list('?fields=relationship_id,metadata&limit=2');
    const keys = (res.body as { data: object[] }).data.map((item) => Object.keys(item).sort());
    for (const k of keys)
      expect(k.every((f) => ['metadata', 'relationship_id'].includes(f))).toBe(true);
    expect(keys[0]).toContain('relationship_id');
  });

  it.each([
    ['?limit=0', 'limit'],
    ['?limit=1001', 'limit'],
    ['?limit=abc', 'limit'],
    ['?offset=-1', 'offset'],
    ['?fields=relationship_id,secret', 'fields'],
    ['?filter=preferred_name:x', 'filter'],
    ['?filter=relationship_id', 'filter'],
    ['?search=cui:C1', 'search'],
    ['?include_total=perhaps', 'include_total'],
    ['?sort=relationship_id:asc', 'sort'],
  ])('answers 422 to %s at query.%s', async (query, param) => {
    const res = await list(query);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ loc: ['query', param], msg: expect.any(String), type: expect.any(String) }],
    });
  });

  it.each([
    ['?limit=1001', 'less_than_equal', 'Input should be less than or equal to 1000'],
    ['?limit=0', 'greater_than_equal', 'Input should be greater than or equal to 1'],
    ['?offset=-1', 'greater_than_equal', 'Input should be greater than or equal to 0'],
    ['?limit=1.5', 'int_parsing', 'Input should be a valid integer'],
  ])('answers %s with the error type and message FastAPI gives', async (query, type, msg) => {
    const res = await list(query);
    expect(res.body).toEqual({ detail: [{ loc: ['query', expect.any(String)], msg, type }] });
  });

  it('takes its largest limit from maxListLimit', async () => {
    const small = testApp({ relationshipCount: 300, maxListLimit: 120 });
    try {
      const page = (query: string) =>
        call(small, { url: `/v1/relationships${query}`, headers: auth });
      expect(ids((await page('?limit=120')).body)).toHaveLength(120);
      expect(await page('?limit=121')).toMatchObject({
        status: 422,
        body: {
          detail: [
            {
              loc: ['query', 'limit'],
              msg: 'Input should be less than or equal to 120',
              type: 'less_than_equal',
            },
          ],
        },
      });
    } finally {
      await small.close();
    }
  });

  it('says that no sort field is supported', async () => {
    const res = await list('?sort=relationship_id:desc');
    expect(res.body).toMatchObject({ detail: [{ msg: 'no sort field is currently supported' }] });
  });
});

describe('graph determinism', () => {
  it('serves the same graph from two instances with the same seed, another from another seed', async () => {
    const pages = [];
    for (const seed of [11, 11, 12]) {
      const other = testApp({ seed, relationshipCount: 300 });
      pages.push((await call(other, { url: '/v1/relationships?limit=1000', headers: auth })).body);
      await other.close();
    }
    expect(pages[1]).toEqual(pages[0]);
    expect(pages[2]).not.toEqual(pages[0]);
  });
});
