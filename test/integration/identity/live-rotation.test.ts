import { once } from 'node:events';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../../../src/app/compose-app.ts';
import { loadConfig } from '../../../src/config/load-config.ts';
import { CrosswalkKeyring, keyIdOf } from '../../../src/identity/crosswalk-keyring.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { Partitions } from '../../../src/queues/partitions.ts';
import { requestConnection } from '../../../src/queues/redis-connections.ts';
import type { RedisClient } from '../../../src/queues/redis-client.ts';
import { RecordStore } from '../../../src/records/record-store.ts';
import { rotateKeys } from '../../../src/identity/rotate-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { isolatedRedis, testRedisEndpoint, testRedisEnv } from '../../support/redis.ts';
import { redisKeys } from '../../support/scan-redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';

const TOKEN = 'live-rotation-token-0123456789';
const LANES = 4;
const FIRST_PATIENTS = 12;
const PREVENT_ID = 'prevent-live-rotation-1';
const FHIR_ID = 'Condition/live-rotation-1';

let redis: Awaited<ReturnType<typeof isolatedRedis>>;
beforeEach(async () => {
  redis = await isolatedRedis();
});
afterEach(() => redis.cleanup());

/** An ingest process as `ingest` builds it (src/runtime/run-ingest.ts), in this process. */
interface IngestProcess {
  app: FastifyInstance;
  crosswalk: Crosswalk;
  inflight: Set<Promise<unknown>>;
  logLines: string[];
  close(): Promise<void>;
}

function configOf(keys: Record<string, string>) {
  return loadConfig({
    env: {
      ...testRedisEnv(),
      INGEST_TOKENS: TOKEN,
      REDIS_PREFIX: redis.prefix,
      LOG_LEVEL: 'info',
      ...keys,
    },
  });
}

async function startIngest(keys: Record<string, string>): Promise<IngestProcess> {
  const config = configOf(keys);
  const connection = requestConnection(testRedisEndpoint(), 'live-rotation');
  if (connection.status !== 'ready') await once(connection, 'ready');
  const logLines: string[] = [];
  const logger = createLogger({
    name: 'ingest',
    level: 'info',
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    }),
  });
  const composed = App.compose(config, logger, { redis: connection, registry: new Registry() });
  const app = await composed.ingestApp({ ...composed.ingestParts() });
  await app.ready();
  return {
    app,
    crosswalk: composed.crosswalk,
    inflight: new Set(),
    logLines,
    async close() {
      await app.close();
      connection.disconnect();
    },
  };
}

/** `keys …` as an operator runs it, with the deployment's keyring. */
async function keysCli(keyring: string, ...args: string[]) {
  const cli = new CliProcess(['keys', ...args], {
    ...testRedisEnv(),
    REDIS_PREFIX: redis.prefix,
    CROSSWALK_KEYS: keyring,
  });
  const code = await cli.exited;
  return { code, output: cli.stdout.join('\n'), lines: cli.lines };
}

/**
 * Record updates from several senders at once, each to any live process, while the processes are
 * replaced one by one; every patient's updates are sent one after another (its own lane), and new
 * patients keep arriving. Records what each answer named.
 */
class Traffic {
  readonly pool: IngestProcess[] = [];
  /** Every service id answered for a local id. */
  readonly answers = new Map<string, Set<string>>();
  readonly failures: string[] = [];
  #posted = 0;
  #stopped = false;
  #waiters: { at: number; resolve: () => void }[] = [];
  #lanes: Promise<void>[] = [];
  #next = 0;

  start(): void {
    this.#lanes = Array.from({ length: LANES }, (_, lane) => this.#lane(lane));
  }

  /** Resolves once `count` more updates were answered. */
  more(count: number): Promise<void> {
    const at = this.#posted + count;
    return new Promise((resolve) => this.#waiters.push({ at, resolve }));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#lanes);
  }

  /** A rolling restart's step: `next` joins, then `old` leaves once its requests are answered. */
  async replace(old: IngestProcess, next: IngestProcess): Promise<void> {
    this.pool.push(next);
    this.pool.splice(this.pool.indexOf(old), 1);
    await Promise.all(old.inflight);
    await old.close();
  }

  async #lane(lane: number): Promise<void> {
    const mine = Array.from(
      { length: FIRST_PATIENTS / LANES },
      (_, i) => `MRN-LIVE-${lane}-${String(i).padStart(4, '0')}`,
    );
    for (let round = 0; !this.#stopped; round++) {
      // Every third round a patient nobody sent before.
      if (round % 3 === 2) mine.push(`MRN-LIVE-${lane}-NEW-${round}`);
      for (const localId of mine) {
        if (this.#stopped) return;
        await this.#post(localId);
      }
    }
  }

  async #post(localId: string): Promise<void> {
    const target = this.pool[this.#next++ % this.pool.length] as IngestProcess;
    const request = target.app.inject({
      method: 'POST',
      url: '/v1/record-updates',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      payload: JSON.stringify({
        patient_id: localId,
        event_id: `evt-${this.#posted}-${localId}`,
        source: 'live-rotation',
        occurred_at: new Date().toISOString(),
        assembled_patient: {
          ...samplePatient,
          demographics: { ...samplePatient.demographics, age: 40 + (this.#posted % 50) },
        },
      }),
    });
    target.inflight.add(request);
    const res = await request.finally(() => target.inflight.delete(request));
    if (res.statusCode !== 202) this.failures.push(`${res.statusCode} ${res.body}`);
    else {
      const psid = (res.json() as { patient_service_id: string }).patient_service_id;
      const seen = this.answers.get(localId) ?? new Set();
      seen.add(psid);
      this.answers.set(localId, seen);
    }
    this.#posted += 1;
    for (const waiter of this.#waiters.splice(0)) {
      if (waiter.at <= this.#posted) waiter.resolve();
      else this.#waiters.push(waiter);
    }
  }
}

/** The sealed values at rest under the prefix (every partition), each with its associated data. */
async function sealedAtRest(r: RedisClient, prefix: string) {
  const values: { key: string; value: string; context: string }[] = [];
  const forwards: string[] = [];
  for (const key of await redisKeys(r, prefix)) {
    const [, kind, id] = /^\{[^}]*\}:(xwr|xw|rec|fhir):(.+)$/.exec(key) ?? [];
    if (kind === 'xwr') values.push({ key, value: (await r.get(key)) ?? '', context: `xw:${id}` });
    if (kind === 'xw') {
      forwards.push(key);
      const [psid, local, prevent] = await r.hmget(key, 'psid', 'local', 'prevent_patient_id');
      values.push({ key, value: local ?? '', context: `xw:${psid ?? ''}` });
      if (prevent != null) values.push({ key, value: prevent, context: `xwp:${psid ?? ''}` });
    }
    if (kind === 'rec') {
      const [record, clinical] = await r.hmget(key, 'record', 'clinical');
      if (record != null) values.push({ key, value: record, context: `rec:${id}` });
      if (clinical != null) values.push({ key, value: clinical, context: `clin:${id}` });
    }
    if (kind === 'fhir') {
      for (const [, value] of Object.entries(await r.hgetall(key))) {
        values.push({ key, value, context: `fhir:${id}` });
      }
    }
  }
  return { values, forwards };
}

describe('live key rotation (CROSSWALK_KEYS)', () => {
  it('rotates while updates flow through a rolling restart: nothing lost, nothing unreadable, nothing left under the old key', async () => {
    const [secretA, secretB] = [generateCrosswalkSecret(), generateCrosswalkSecret()];
    const phase0 = { CROSSWALK_KEY: secretA };
    const phase1 = { CROSSWALK_KEYS: `0:${secretA},k1:${secretB}` };
    const phase2 = { CROSSWALK_KEYS: `k1:${secretB},0:${secretA}` };
    const phase4 = { CROSSWALK_KEYS: `k1:${secretB}` };
    const traffic = new Traffic();
    const first = [await startIngest(phase0), await startIngest(phase0)];
    traffic.pool.push(...first);

    // Before: patients under CROSSWALK_KEY alone, one with a Prevent id and an opaque FHIR id.
    traffic.start();
    await traffic.more(FIRST_PATIENTS * 2);
    const [someone = ''] = [...traffic.answers.keys()];
    const someonePsid = [...(traffic.answers.get(someone) ?? [])][0] ?? '';
    expect(await first[0]?.crosswalk.keepPreventPatientId(someone, someonePsid, PREVENT_ID)).toBe(
      true,
    );
    const opaque = await first[0]?.crosswalk.opaqueFhirId(someonePsid, FHIR_ID);

    // Phase 1: the new key readable everywhere, one process after the other.
    const p1 = [await startIngest(phase1), await startIngest(phase1)];
    await traffic.replace(first[0] as IngestProcess, p1[0] as IngestProcess);
    await traffic.more(20);
    await traffic.replace(first[1] as IngestProcess, p1[1] as IngestProcess);
    await traffic.more(20);

    // Phase 2: the new key seals, one process after the other (the two phases serve together).
    const p2 = [await startIngest(phase2), await startIngest(phase2)];
    await traffic.replace(p1[0] as IngestProcess, p2[0] as IngestProcess);
    await traffic.more(30);
    await traffic.replace(p1[1] as IngestProcess, p2[1] as IngestProcess);
    await traffic.more(20);

    // Phase 3: some remain under key 0; the live re-seal moves them while updates flow.
    const before = await keysCli(phase2.CROSSWALK_KEYS, 'status');
    expect(before.code, before.lines.join('\n')).toBe(1);
    const remaining = /remaining\s+(\d+) under 0/.exec(before.output);
    expect(Number(remaining?.[1])).toBeGreaterThan(0);
    const moved = await keysCli(phase2.CROSSWALK_KEYS, 'rotate', '--live');
    expect(moved.code, moved.lines.join('\n')).toBe(0);
    expect(moved.output).toMatch(/crosswalk\s+resealed [1-9]\d*/);
    await traffic.more(30);
    const after = await keysCli(phase2.CROSSWALK_KEYS, 'status');
    expect(after.code, after.lines.join('\n')).toBe(0);
    expect(after.output).toContain('remaining        0: nothing rests under 0');

    // Phase 4: the old key removed, one process after the other.
    const p4 = [await startIngest(phase4), await startIngest(phase4)];
    await traffic.replace(p2[0] as IngestProcess, p4[0] as IngestProcess);
    await traffic.more(20);
    await traffic.replace(p2[1] as IngestProcess, p4[1] as IngestProcess);
    await traffic.more(20);
    await traffic.stop();

    // Nothing lost: every update was accepted, and every patient kept its one service id.
    expect(traffic.failures).toEqual([]);
    expect(traffic.answers.size).toBeGreaterThan(FIRST_PATIENTS);
    const finalKeys = CrosswalkKeyring.parse(phase4.CROSSWALK_KEYS);
    const prefix = redis.prefix;
    const space = Partitions.of(configOf(phase4).redis);
    const crosswalk = new Crosswalk({ redis: redis.redis, prefix: space, keys: finalKeys });
    const records = new RecordStore({ redis: redis.redis, prefix: space, keys: finalKeys });
    for (const [localId, psids] of traffic.answers) {
      expect([...psids], localId).toHaveLength(1);
      const [psid = ''] = psids;
      expect(await crosswalk.find(localId)).toBe(psid);
      expect(await crosswalk.localIdOf(psid)).toBe(localId);
      expect((await records.get(psid))?.record?.demographics.gender).toBe('female');
    }
    expect(await crosswalk.preventPatientIdOf(someone, someonePsid)).toBe(PREVENT_ID);
    expect(await crosswalk.fhirIdOf(someonePsid, opaque ?? '')).toBe(FHIR_ID);

    // Nothing unreadable, nothing under the old key: every sealed value at rest names key k1 and
    // opens under the final keyring; one lookup entry per patient (none left under key 0).
    const { values, forwards } = await sealedAtRest(redis.redis, prefix);
    expect(values.length).toBeGreaterThan(traffic.answers.size * 3);
    for (const { key, value, context } of values) {
      expect(keyIdOf(value), key).toBe('k1');
      expect(() => finalKeys.open(value, context), key).not.toThrow();
    }
    expect(forwards).toHaveLength(traffic.answers.size);

    // No local id in any log line or command output.
    const output = [before, moved, after].flatMap((run) => run.lines);
    const logs = [...first, ...p1, ...p2, ...p4].flatMap((p) => p.logLines);
    for (const line of [...output, ...logs]) expect(line).not.toContain('MRN-LIVE');
  }, 120_000);

  it('never overwrites a lookup entry under the new key that names another patient: counted as a conflict, both left, status says so', async () => {
    const [secretA, secretB] = [generateCrosswalkSecret(), generateCrosswalkSecret()];
    const ring = CrosswalkKeyring.parse(`k1:${secretB},0:${secretA}`);
    const space = Partitions.of(configOf({ CROSSWALK_KEY: secretA }).redis);
    const on = (keys: CrosswalkKeyring) =>
      new Crosswalk({ redis: redis.redis, prefix: space, keys });
    // The race the docs describe: the same new patient created under each key at once.
    const underOld = await on(CrosswalkKeyring.legacy(secretA)).resolve('MRN-LIVE-RACE');
    const underNew = await on(CrosswalkKeyring.parse(`k1:${secretB}`)).resolve('MRN-LIVE-RACE');
    expect(underNew.patientServiceId).not.toBe(underOld.patientServiceId);
    const before = await redisKeys(redis.redis, redis.prefix);

    const report = await rotateKeys({
      redis: redis.redis,
      prefix: space,
      crosswalk: ring.rotation(),
    });
    expect(report.crosswalk).toEqual({ resealed: 0, already: 1, unreadable: 0, conflicts: 1 });
    expect((await redisKeys(redis.redis, redis.prefix)).sort()).toEqual(before.sort());
    // The keyring still finds the one under the sealing key; the other is still there to be merged.
    expect(await on(ring).find('MRN-LIVE-RACE')).toBe(underNew.patientServiceId);
    expect(await on(ring).localIdOf(underOld.patientServiceId)).toBe('MRN-LIVE-RACE');

    const status = await keysCli(`k1:${secretB},0:${secretA}`, 'status');
    expect(status.code, status.lines.join('\n')).toBe(1);
    expect(status.output).toContain(
      'crosswalk        resealed 0  already 1  unreadable 0  conflicts 1',
    );
    expect(status.output).toContain('remaining        0 under 0; 1 unreadable or in conflict');
    expect(status.output).not.toContain('MRN-LIVE');
  });
});
