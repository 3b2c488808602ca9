import { afterAll, describe, expect, it } from 'vitest';
import { ConcordanceJobResultSchema } from '../../../src/interface/concordance.ts';
import {
  admin,
  auth,
  call,
  concordanceBody,
  hypertensionPatient,
  testApp,
} from './simulator-fixtures.ts';

const submit = (app: ReturnType<typeof testApp>, body: unknown = concordanceBody) =>
  call(app, { method: 'POST', url: '/v1/concordance', headers: auth, payload: body as object });
const poll = (app: ReturnType<typeof testApp>, id: string) =>
  call(app, { url: `/v1/concordance/${id}`, headers: auth });

/** A simulator whose clock the test moves. */
function clocked(options: Parameters<typeof testApp>[0] = {}) {
  const clock = { t: Date.UTC(2026, 0, 1) };
  return { clock, app: testApp({ now: () => clock.t, ...options }) };
}

describe('POST /v1/concordance', () => {
  const app = testApp();
  afterAll(() => app.close());

  it('answers 202 with a UUID-shaped job id', async () => {
    const res = await submit(app);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      job_id: expect.stringMatching(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      ),
    });
  });

  it.each(['XXX000', 'XXX111', 'NoDX1', 'InvlDX', 'ABC123'])(
    'rejects the category %s with 422 at body.ccsr_category',
    async (code) => {
      const res = await submit(app, { ...concordanceBody, ccsr_category: code });
      expect(res).toMatchObject({
        status: 422,
        body: {
          detail: [
            {
              loc: ['body', 'ccsr_category'],
              msg: expect.stringContaining('CCSR'),
              type: expect.any(String),
            },
          ],
        },
      });
    },
  );

  it('names the path of a bad node field', async () => {
    const patient = {
      ...hypertensionPatient,
      nodes: [{ ...hypertensionPatient.nodes[0], node_type: 'gene' }],
    };
    const res = await submit(app, { assembled_patient: patient, ccsr_category: 'CIR007' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['body', 'assembled_patient', 'nodes', 0, 'node_type'],
          msg: expect.any(String),
          type: 'invalid_value',
        },
      ],
    });
  });

  it('reports missing fields and a body that is no object', async () => {
    const missing = await submit(app, { assembled_patient: hypertensionPatient });
    expect(missing.body).toEqual({
      detail: [{ loc: ['body', 'ccsr_category'], msg: expect.any(String), type: 'invalid_type' }],
    });
    const list = await submit(app, [1, 2]);
    expect(list).toMatchObject({ status: 422, body: { detail: [{ loc: ['body'] }] } });
  });

  it('reports an edge to an unknown node', async () => {
    const patient = {
      ...hypertensionPatient,
      relationships: [{ source_id: 'c1', target_id: 'zz' }],
    };
    const res = await submit(app, { assembled_patient: patient, ccsr_category: 'CIR007' });
    expect(res.body).toMatchObject({
      detail: [{ loc: ['body', 'assembled_patient', 'relationships', 0, 'target_id'] }],
    });
  });
});

describe('GET /v1/concordance/{job_id}', () => {
  it('moves queued -> running -> completed on the job duration and returns the concordance', async () => {
    const { clock, app } = clocked({ latency: { minMs: 1000, maxMs: 1000 } });
    const { body } = await submit(app);
    const id = (body as { job_id: string }).job_id;
    expect((await poll(app, id)).body).toEqual({ status: 'queued', concordance: null });
    clock.t += 250;
    expect((await poll(app, id)).body).toEqual({ status: 'running', concordance: null });
    clock.t += 750;
    const done = await poll(app, id);
    expect(done.status).toBe(200);
    expect(ConcordanceJobResultSchema.parse(done.body).status).toBe('completed');
    expect(done.body).toMatchObject({
      status: 'completed',
      concordance: {
        simulated: true,
        disclaimer: 'Simulated by the local Clinical Graph Service; not medical advice.',
        ccsr_category: 'CIR007',
        ccsr_category_description: 'Essential hypertension',
        ccsr_body_system: 'CIR',
        recommendations: expect.arrayContaining([
          expect.objectContaining({ verdict: 'concordant', evidence_node_ids: ['c1'] }),
        ]),
        references: expect.any(Array),
        flags: expect.any(Array),
      },
    });
    await app.close();
  });

  it('draws durations between the latency bounds', async () => {
    const { clock, app } = clocked({ latency: { minMs: 100, maxMs: 200 } });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(((await submit(app)).body as { job_id: string }).job_id);
    clock.t += 99;
    for (const id of ids)
      expect((await poll(app, id)).body).toMatchObject({
        status: expect.stringMatching(/queued|running/),
      });
    clock.t += 101;
    for (const id of ids) expect((await poll(app, id)).body).toMatchObject({ status: 'completed' });
    await app.close();
  });

  it('answers not_exists with concordance null for an unknown id', async () => {
    const { app } = clocked();
    expect(await poll(app, 'no-such-job')).toMatchObject({
      status: 200,
      body: { status: 'not_exists', concordance: null },
    });
    await app.close();
  });

  it('answers 422 at path.job_id to an over-long id', async () => {
    const { app } = clocked();
    const res = await poll(app, 'j'.repeat(129));
    expect(res).toMatchObject({ status: 422, body: { detail: [{ loc: ['path', 'job_id'] }] } });
    await app.close();
  });

  it('expires finished jobs after the TTL and evicts them from memory', async () => {
    const { clock, app } = clocked({ jobTtlMs: 60_000 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(((await submit(app)).body as { job_id: string }).job_id);
    const stats = async () => (await call(app, { url: '/_admin/stats', headers: admin })).body;
    expect(await stats()).toMatchObject({ jobs: 5 });
    clock.t += 59_999;
    expect((await poll(app, ids[0] ?? '')).body).toMatchObject({ status: 'completed' });
    clock.t += 1;
    expect((await poll(app, ids[0] ?? '')).body).toEqual({
      status: 'not_exists',
      concordance: null,
    });
    expect(await stats()).toMatchObject({ jobs: 4 });
    // The others go with the next sweep, which any job access runs at most once a second.
    clock.t += 1000;
    expect((await poll(app, 'unrelated')).body).toMatchObject({ status: 'not_exists' });
    expect(await stats()).toMatchObject({ jobs: 0 });
    for (const id of ids)
      expect((await poll(app, id)).body).toMatchObject({ status: 'not_exists' });
    await app.close();
  });

  it('completes on a real clock too (small latency, bounded polling)', async () => {
    const app = testApp({ latency: { minMs: 5, maxMs: 20 } });
    const id = ((await submit(app)).body as { job_id: string }).job_id;
    const seen = new Set<string>();
    const final = await (async () => {
      for (let i = 0; i < 1000; i++) {
        const { status } = (await poll(app, id)).body as { status: string };
        seen.add(status);
        if (status === 'completed') return status;
        await new Promise((r) => setTimeout(r, 5));
      }
      return [...seen].join(',');
    })();
    expect(final).toBe('completed');
    expect([...seen].every((s) => ['queued', 'running', 'completed'].includes(s))).toBe(true);
    await app.close();
  });
});

describe('job faults', () => {
  it('loses every job with job_loss_rate 1: not_exists once it would run', async () => {
    const { clock, app } = clocked({
      latency: { minMs: 400, maxMs: 400 },
      faults: { job_loss_rate: 1 },
    });
    const id = ((await submit(app)).body as { job_id: string }).job_id;
    expect((await poll(app, id)).body).toMatchObject({ status: 'queued' });
    clock.t += 100;
    expect((await poll(app, id)).body).toEqual({ status: 'not_exists', concordance: null });
    await app.close();
  });

  it('fails every job with job_failure_rate 1', async () => {
    const { app } = clocked({ faults: { job_failure_rate: 1 } });
    const id = ((await submit(app)).body as { job_id: string }).job_id;
    expect((await poll(app, id)).body).toEqual({ status: 'failed', concordance: null });
    await app.close();
  });

  it('keeps every job running with never_finish_rate 1', async () => {
    const { clock, app } = clocked({ faults: { never_finish_rate: 1 } });
    const id = ((await submit(app)).body as { job_id: string }).job_id;
    clock.t += 10 * 60_000;
    expect((await poll(app, id)).body).toEqual({ status: 'running', concordance: null });
    await app.close();
  });

  it('lets the profile latency replace the configured one', async () => {
    const { clock, app } = clocked({
      latency: { minMs: 0, maxMs: 0 },
      faults: { latency: { min_ms: 5000, max_ms: 5000 } },
    });
    const id = ((await submit(app)).body as { job_id: string }).job_id;
    clock.t += 4999;
    expect((await poll(app, id)).body).toMatchObject({ status: 'running' });
    clock.t += 1;
    expect((await poll(app, id)).body).toMatchObject({ status: 'completed' });
    await app.close();
  });
});

describe('determinism', () => {
  it('gives the same concordance for the same input, whatever the job id or instance', async () => {
    const results: unknown[] = [];
    const jobIds: string[] = [];
    for (const seed of [1, 1, 2]) {
      const app = testApp({ seed });
      for (let i = 0; i < 2; i++) {
        const id = ((await submit(app)).body as { job_id: string }).job_id;
        jobIds.push(id);
        results.push((await poll(app, id)).body);
      }
      await app.close();
    }
    expect(new Set(jobIds.slice(0, 2)).size).toBe(2);
    expect(jobIds.slice(0, 2)).toEqual(jobIds.slice(2, 4));
    expect(jobIds.slice(4)).not.toEqual(jobIds.slice(0, 2));
    for (const r of results) expect(r).toEqual(results[0]);
  });

  it('gives a different concordance for another category', async () => {
    const app = testApp();
    const a = ((await submit(app)).body as { job_id: string }).job_id;
    const b = (
      (await submit(app, { ...concordanceBody, ccsr_category: 'END002' })).body as {
        job_id: string;
      }
    ).job_id;
    const [ra, rb] = [(await poll(app, a)).body, (await poll(app, b)).body];
    expect(rb).toMatchObject({
      concordance: {
        ccsr_category: 'END002',
        flags: expect.arrayContaining(['no_matching_nodes']),
      },
    });
    expect(ra).not.toEqual(rb);
    await app.close();
  });
});
