import type { RedisClient } from '../../../src/queues/redis-client.ts';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { emptyClinicalRecord } from '../../../src/records/clinical-record.ts';
import type { ClinicalChange } from '../../../src/records/clinical-change.ts';
import { ProblemTerminology } from '../../../src/terminology/problem-terminology.ts';
import { TerminologyMetrics } from '../../../src/terminology/terminology-metrics.ts';
import { TerminologyServer } from '../../../src/terminology/terminology-server.ts';
import { TerminologyServerError } from '../../../src/terminology/terminology-server-error.ts';
import {
  UnmappedProblems,
  topUnmappedProblems,
} from '../../../src/terminology/unmapped-problems.ts';
import { isolatedRedis } from '../../support/redis.ts';
import {
  startTerminologyServer,
  type LocalTerminologyServer,
} from '../../support/terminology-server.ts';

const SCT = 'http://snomed.info/sct';
const ICD10 = 'http://hl7.org/fhir/sid/icd-10-cm';

let redis: RedisClient;
let prefix: string;
let cleanup: () => Promise<void>;
let server: LocalTerminologyServer;

beforeEach(async () => {
  ({ redis, prefix, cleanup } = await isolatedRedis());
  server = await startTerminologyServer({
    table: { [`${SCT}|38341003`]: ['I10'], [`${SCT}|431855005`]: ['N18.1'] },
    failing: ['44054006'],
  });
});
afterEach(async () => {
  await server.close();
  await cleanup();
});

function client(method: 'GET' | 'POST', extra: { token?: string } = {}) {
  return new TerminologyServer({
    baseUrl: server.baseUrl,
    method,
    targetParameter: 'targetsystem',
    timeoutMs: 5_000,
    cacheTtlS: 3_600,
    redis,
    prefix,
    ...extra,
  });
}

describe('ConceptMap/$translate against a local terminology server', () => {
  it('GET: translates, then answers the second lookup from the Redis cache (one call)', async () => {
    const t = client('GET', { token: 'terminology-token-123' });
    expect(await t.translate(SCT, '38341003')).toEqual({ codes: ['I10'], cached: false });
    expect(await t.translate(SCT, '38341003')).toEqual({ codes: ['I10'], cached: true });
    expect(server.calls).toEqual([
      {
        method: 'GET',
        params: { system: SCT, code: '38341003', targetsystem: ICD10 },
        authorization: 'Bearer terminology-token-123',
      },
    ]);
    const [key] = await redis.keys(`${prefix}:terminology:translate:*`);
    const ttl = await redis.ttl(key ?? '');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3_600);
  });

  it('POST: sends a Parameters body; "no mapping" is cached too', async () => {
    const t = client('POST');
    expect(await t.translate(SCT, '431855005')).toEqual({ codes: ['N18.1'], cached: false });
    expect(await t.translate(SCT, '195662009')).toEqual({ codes: [], cached: false });
    expect(await t.translate(SCT, '195662009')).toEqual({ codes: [], cached: true });
    expect(server.calls.map((c) => [c.method, c.params.code, c.params.targetsystem])).toEqual([
      ['POST', '431855005', ICD10],
      ['POST', '195662009', ICD10],
    ]);
    expect(server.calls[0]?.authorization).toBeUndefined();
  });

  it('a failing server: TerminologyServerError, nothing cached, asked again next time', async () => {
    const t = client('GET');
    await expect(t.translate(SCT, '44054006')).rejects.toBeInstanceOf(TerminologyServerError);
    const calls = server.calls.length;
    await expect(t.translate(SCT, '44054006')).rejects.toMatchObject({
      code: 'ERR_TERMINOLOGY_SERVER',
    });
    expect(server.calls.length).toBeGreaterThan(calls);
    expect(await redis.keys(`${prefix}:terminology:translate:*`)).toEqual([]);
  });

  it('ProblemTerminology: server first, a server failure falls through to the embedded table, unmapped problems are counted by system and listed', async () => {
    const registry = new Registry();
    const t = new ProblemTerminology({
      sources: ['server', 'embedded'],
      server: client('GET'),
      unmapped: new UnmappedProblems({ redis, prefix, registry }),
      metrics: new TerminologyMetrics(registry),
    });
    const condition = (key: string, system: string, code: string, status = 'active') =>
      ({
        type: 'upsert',
        item: { key, kind: 'condition', codings: [{ system, code }], source: 'fhir', status },
      }) satisfies ClinicalChange;
    const changes = await t.annotate(
      [
        condition('ckd', SCT, '431855005'),
        condition('dm', SCT, '44054006'), // the server fails: the embedded table answers
        condition('viral', SCT, '195662009'), // nowhere
        condition('viral-again', 'SCT', '195662009'),
        condition('icd9', 'I9', '596.5'),
        condition('resolved', SCT, '999999999', 'resolved'), // not active: not counted
      ],
      emptyClinicalRecord(),
    );
    const icd = (key: string) =>
      changes.flatMap((c) =>
        c.type === 'upsert' && c.item.key === key
          ? c.item.codings.filter((x) => x.system === ICD10).map((x) => x.code)
          : [],
      );
    expect(icd('ckd')).toEqual(['N18.1']);
    expect(icd('dm')).toEqual(['E11.9']);
    expect(icd('viral')).toEqual([]);
    // The same problem twice in one message (under two names of SNOMED CT) counts once; the next
    // message that reports it counts again.
    expect(await topUnmappedProblems(redis, prefix)).toEqual([
      { system: SCT, code: '195662009', count: 1 },
      { system: 'http://hl7.org/fhir/sid/icd-9-cm', code: '596.5', count: 1 },
    ]);
    await t.annotate([condition('viral', SCT, '195662009')], emptyClinicalRecord());
    expect(await topUnmappedProblems(redis, prefix)).toEqual([
      { system: SCT, code: '195662009', count: 2 },
      { system: 'http://hl7.org/fhir/sid/icd-9-cm', code: '596.5', count: 1 },
    ]);
    const text = await registry.metrics();
    expect(text).toContain('cw_unmapped_problems_total{system="snomed"} 2');
    expect(text).toContain('cw_unmapped_problems_total{system="icd9cm"} 1');
    expect(text).toContain('cw_problems_mapped_total{source="server"} 1');
    expect(text).toContain('cw_problems_mapped_total{source="embedded"} 1');
    expect(text).toMatch(/cw_terminology_server_errors_total [1-9]/);
  });
});
