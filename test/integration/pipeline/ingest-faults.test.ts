import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../../../src/app/compose-app.ts';
import type { Config } from '../../../src/config/config-schema.ts';
import { loadConfig } from '../../../src/config/load-config.ts';
import { deriveCrosswalkKeys } from '../../../src/identity/crosswalk-keys.ts';
import { startMllpServer, type MllpServer } from '../../../src/ingest/hl7v2/mllp-server.ts';
import { requestConnection } from '../../../src/queues/redis-connections.ts';
import { eventually } from '../../support/eventually.ts';
import { FaultyRedis, type FaultMode } from '../../support/faulty-redis.ts';
import {
  API_KEY,
  PipelineHarness,
  sampleRecord,
  testConfig,
} from '../../support/pipeline-harness.ts';
import { testRedisEndpoint } from '../../support/redis.ts';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';

const TOKEN = randomBytes(24).toString('hex');
const AUTH = { authorization: `Bearer ${TOKEN}` };

type Channel = 'json' | 'hl7v2' | 'fhir';

/** One record update of a new patient over `channel`; resolves true when it was acknowledged. */
type Send = (channel: Channel, localId: string, attempt: number) => Promise<boolean>;

function adt(localId: string, controlId: string): string {
  return [
    `MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||ADT^A08|${controlId}|P|2.5.1`,
    'EVN|A08|20260101120000',
    // No assigning authority: the key is the id alone, as the JSON and FHIR feeds' ids here.
    `PID|1||${localId}^^^^MR||Doe^Jane||19600101|F`,
    'DG1|1||E11.9^^I10||20260101|F',
  ].join('\r');
}

function bundle(localId: string) {
  return {
    resourceType: 'Bundle',
    id: `bundle-${localId}`,
    type: 'collection',
    entry: [
      {
        fullUrl: `http://fhir.example/Patient/${localId}`,
        resource: {
          resourceType: 'Patient',
          id: localId,
          birthDate: '1960-01-01',
          gender: 'female',
        },
      },
      {
        fullUrl: `http://fhir.example/Condition/c-${localId}`,
        resource: {
          resourceType: 'Condition',
          id: `c-${localId}`,
          subject: { reference: `Patient/${localId}` },
          clinicalStatus: {
            coding: [
              {
                system: 'http://terminology.hl7.org/CodeSystem/condition-clinical',
                code: 'active',
              },
            ],
          },
          code: { coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }] },
        },
      },
    ],
  };
}

/**
 * Drops the ingest's Redis connection at every step of every ingest path — before a command
 * reaches Redis, and after Redis carried it out but before its reply arrived — and sends each
 * update again as an integration engine does until it is acknowledged. Every acknowledged update
 * must then have its query run and its result delivered: the record, the event id and the query
 * are written in one script, so no failure leaves an acknowledged change without its query.
 */
describe('a Redis failure between any two ingest steps (JSON, MLLP, FHIR)', () => {
  let harness: PipelineHarness;
  let faulty: FaultyRedis;
  let app: Awaited<ReturnType<App['ingestApp']>>;
  let mllp: MllpServer;
  let send: Send;

  beforeAll(async () => {
    const base = testConfig();
    harness = await PipelineHarness.start({ config: base });
    const prefix = harness.prefix;
    const loaded = loadConfig({
      env: { SERVICE_API_KEY: API_KEY, INGEST_TOKENS: TOKEN, REDIS_PREFIX: prefix },
    });
    const config: Config = {
      ...loaded,
      // The harness's Redis and partitions (those of the run).
      redis: harness.config.redis,
      queries: base.queries,
      // One query per patient, whatever the feed: a rule, not the problem list.
      presets: {
        rules: [{ ccsr_category: 'END002' }],
        from_problem_list: { ...loaded.presets.from_problem_list, enabled: false },
      },
    };
    const connection = requestConnection(testRedisEndpoint(), 'faulty-ingest');
    connection.on('error', () => undefined);
    if (connection.status !== 'ready') await once(connection, 'ready');
    faulty = new FaultyRedis(connection);
    // The app as `ingest` builds it, on the faulty connection and the harness's crosswalk key.
    const composed = App.compose(config, harness.logs.logger, {
      redis: faulty.client,
      keys: deriveCrosswalkKeys(harness.secret),
      registry: new Registry(),
    });
    const parts = composed.ingestParts();
    app = await composed.ingestApp(parts);
    mllp = await startMllpServer({
      config: config.hl7v2,
      updates: parts.updates,
      registry: composed.metrics,
      logger: harness.logs.logger,
      port: 0,
      host: '127.0.0.1',
    });

    send = async (channel, localId, attempt) => {
      if (channel === 'hl7v2') {
        const ack = await sendOne(mllp.port, adt(localId, `CTRL-${localId}`));
        return segmentOf(ack ?? '', 'MSA')[1] === 'AA';
      }
      const response = await app.inject(
        channel === 'json'
          ? {
              method: 'POST',
              url: '/v1/record-updates',
              headers: { ...AUTH, 'content-type': 'application/json' },
              payload: {
                patient_id: localId,
                event_id: `evt-${localId}`,
                assembled_patient: sampleRecord(`attempt-${attempt}`),
              },
            }
          : {
              method: 'POST',
              url: '/v1/fhir/Bundle',
              headers: { ...AUTH, 'content-type': 'application/fhir+json' },
              payload: bundle(localId),
            },
      );
      // 202 accepted, or 200 for the JSON resend of an update already stored (a duplicate).
      if (response.statusCode === 202 || response.statusCode === 200) return true;
      expect(response.statusCode, response.body).toBe(503);
      return false;
    };
    harness.logs.logger.level = 'info';
    return async () => {
      await mllp.close();
      await app.close();
      connection.disconnect();
    };
  });
  afterAll(() => harness.close());

  it('runs and delivers the query of every acknowledged update', async () => {
    const acknowledged: { channel: Channel; mode: FaultMode; step: number; localId: string }[] = [];
    const stepsOf: Partial<Record<Channel, number>> = {};
    for (const channel of ['json', 'hl7v2', 'fhir'] as const) {
      // How many Redis commands one update of a new patient takes on this path, with the scripts
      // already loaded in Redis (the first call of a script on a fresh Redis adds a NOSCRIPT round).
      expect(await send(channel, `${channel}-warm-up`, 1)).toBe(true);
      acknowledged.push({ channel, mode: 'before', step: 0, localId: `${channel}-warm-up` });
      faulty.reset();
      const probe = `${channel}-probe`;
      expect(await send(channel, probe, 1)).toBe(true);
      acknowledged.push({ channel, mode: 'before', step: 0, localId: probe });
      const steps = faulty.count;
      stepsOf[channel] = steps;
      expect(steps).toBeGreaterThanOrEqual(2);

      for (const mode of ['before', 'after'] as const) {
        for (let step = 1; step <= steps; step++) {
          const localId = `${channel}-${mode}-${step}`;
          faulty.arm(step, mode);
          let attempt = 1;
          let acked = await send(channel, localId, attempt);
          expect(faulty.fired, `${localId}: the planted failure struck`).toBe(true);
          // The failed attempt is not acknowledged; the sender resends it until it is.
          expect(acked, `${localId}: acknowledged despite the failure`).toBe(false);
          faulty.reset();
          while (!acked && attempt < 3) acked = await send(channel, localId, ++attempt);
          expect(acked, `${localId}: the resend was acknowledged`).toBe(true);
          acknowledged.push({ channel, mode, step, localId });
        }
      }
    }

    await harness.startWorker();
    const psids = new Map<string, string>();
    for (const { localId } of acknowledged) {
      const psid = await harness.crosswalk.find(localId);
      expect(psid, localId).toBeDefined();
      psids.set(psid as string, localId);
    }
    const events = await eventually(
      () => harness.delivered(),
      (delivered) => psids.size === new Set(delivered.map((e) => e.patient_service_id)).size,
      { timeoutMs: 60_000 },
    );
    for (const [psid, localId] of psids) {
      const mine = events.filter((e) => e.patient_service_id === psid);
      expect(
        mine.map((e) => e.status),
        localId,
      ).toEqual(['completed']);
      expect(mine[0]?.ccsr_category).toBe('END002');
    }
    // One submission per acknowledged update: a resend after a lost reply adds no query.
    expect(await harness.submissions()).toHaveLength(psids.size);
    // A new patient: the crosswalk lookup, then the commit script (nothing else to read).
    expect(stepsOf).toMatchObject({ json: 2, hl7v2: 2 });
  });
});
