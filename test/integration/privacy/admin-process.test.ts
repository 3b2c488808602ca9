import { afterEach, describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { dumpRedis } from '../ingest/support/ingest-harness.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';

const TOKEN = 'process-ingest-token-0123456789';
const ADMIN = 'process-admin-token-0123456789';
const LOCAL = 'MRN-PROCESS-PLANTED-c07d';

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

describe('the ingest process serves purge and opt-out', () => {
  it('with ADMIN_TOKENS: an update, an opt-out that cancels its queries, a purge that leaves nothing of the patient', async () => {
    const env = await isolatedRedis();
    const ingest = new CliProcess(['ingest'], {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: env.prefix,
      INGEST_TOKENS: TOKEN,
      ADMIN_TOKENS: ADMIN,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      MLLP_PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    });
    cleanup = async () => {
      await ingest.stop('SIGTERM');
      await env.cleanup();
    };
    const { url } = JSON.parse(await ingest.waitForLine('ingest listening')) as { url: string };
    const send = (method: string, path: string, token: string, body?: unknown) =>
      fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const patient = `/v1/patients/${encodeURIComponent(LOCAL)}`;

    const update = await send('POST', '/v1/record-updates', TOKEN, {
      patient_id: LOCAL,
      event_id: 'evt-process-1',
      assembled_patient: samplePatient,
      ccsr_categories: ['END002', 'CIR007'],
    });
    expect(update.status).toBe(202);
    const psid = ((await update.json()) as { patient_service_id: string }).patient_service_id;

    expect((await send('DELETE', patient, TOKEN)).status).toBe(403);
    const optOut = await send('PUT', `${patient}/opt-out`, ADMIN);
    expect(optOut.status).toBe(200);
    expect(await optOut.json()).toMatchObject({ patient_service_id: psid, queries_cancelled: 2 });

    const purge = await send('DELETE', patient, ADMIN);
    expect(purge.status).toBe(200);
    // Opted out: the crosswalk entry and the flag stay, so that later updates stay opted out.
    expect(await purge.json()).toMatchObject({
      purged: true,
      kept: ['crosswalk', 'opt_out'],
      counts: { record: 1, query_states: 2, query_jobs: 0, idempotency: 1 },
    });
    expect((await send('DELETE', `${patient}/opt-out`, ADMIN)).status).toBe(200);
    const erased = await send('DELETE', patient, ADMIN);
    expect(erased.status).toBe(200);
    expect(await erased.json()).toMatchObject({ kept: [], counts: { crosswalk: 1 } });
    expect((await send('DELETE', patient, ADMIN)).status).toBe(404);

    const dump = await dumpRedis(env.redis, env.prefix);
    const left = [...dump].filter(([key, value]) =>
      [LOCAL, psid].some((m) => key.includes(m) || value.includes(m)),
    );
    expect(left).toEqual([]);
    const audit = ingest.lines.filter((line) => line.includes('"msg":"audit"'));
    expect(audit.map((line) => JSON.parse(line).audit.action)).toEqual([
      'opt_out',
      'purge',
      'opt_in',
      'purge',
      'purge',
    ]);
    for (const line of ingest.lines) expect(line).not.toContain(LOCAL);
  });
});
