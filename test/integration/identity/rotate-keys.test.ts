import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../../../src/delivery/dead-letter-store.ts';
import { openOutboundEvent } from '../../../src/delivery/open-outbound-event.ts';
import { OutboundQueueChannel } from '../../../src/delivery/outbound-queue-channel.ts';
import { WebhookDeliveryStore, queryKeyOf } from '../../../src/delivery/webhook-delivery-store.ts';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
  type CrosswalkKeys,
} from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { rotateKeys } from '../../../src/identity/rotate-keys.ts';
import { emptyClinicalRecord } from '../../../src/records/clinical-record.ts';
import { RecordStore } from '../../../src/records/record-store.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { makeEvent } from '../delivery/delivery-fixture.ts';
import { newOutboundKey } from '../../support/outbound.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import { redisKeys, scanRedisFor } from '../../support/scan-redis.ts';

const QUEUE = 'concordance-results';
const LOCAL_IDS = ['MRN-ROTATE-0001', 'MRN-ROTATE-0002'];
const FHIR_ID = 'Condition/rotate-fhir-1';
const PREVENT_ID = 'prevent-registered-id-1';

let redis: Awaited<ReturnType<typeof isolatedRedis>>;
beforeEach(async () => {
  redis = await isolatedRedis();
});
afterEach(() => redis.cleanup());

/** Everything that rests sealed, under one pair of keys. */
function stores(keys: CrosswalkKeys, outboundKey: string) {
  const { redis: r, prefix } = redis;
  return {
    crosswalk: new Crosswalk({ redis: r, prefix, keys }),
    records: new RecordStore({ redis: r, prefix, keys }),
    webhook: new WebhookDeliveryStore({ redis: r, prefix, keys }),
    deadLetters: new DeadLetterStore({ redis: r, prefix, keys }),
    outbound: new OutboundQueueChannel({
      connection: r,
      prefix,
      name: QUEUE,
      retention: { count: 100, age_s: 3_600, waiting_age_s: 3_600 },
      key: outboundKey,
    }),
  };
}

async function rotateCli(env: Record<string, string>, ...args: string[]) {
  const cli = new CliProcess(['keys', 'rotate', ...args], {
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: redis.prefix,
    ...env,
  });
  const code = await cli.exited;
  return { code, output: cli.stdout.join('\n'), lines: cli.lines };
}

describe('key rotation', () => {
  it('re-seals everything under the new keys; nothing opens with the old ones; a second run changes nothing', async () => {
    const [secretA, secretB] = [generateCrosswalkSecret(), generateCrosswalkSecret()];
    const [outboundA, outboundB] = [newOutboundKey(), newOutboundKey()];
    const [keysA, keysB] = [deriveCrosswalkKeys(secretA), deriveCrosswalkKeys(secretB)];
    const a = stores(keysA, outboundA);

    // Written under key A: crosswalk entries, records (both fields), an opaque FHIR id, an event
    // waiting for the webhook, a dead letter and an outbound event.
    const psids: string[] = [];
    for (const localId of LOCAL_IDS)
      psids.push((await a.crosswalk.resolve(localId)).patientServiceId);
    const [psid = ''] = psids;
    await a.records.put(psid, samplePatient);
    await redis.redis.hset(
      `${redis.prefix}:rec:${psid}`,
      'clinical',
      keysA.seal(JSON.stringify(emptyClinicalRecord()), `clin:${psid}`),
    );
    const opaque = await a.crosswalk.opaqueFhirId(psid, FHIR_ID);
    // The id Prevent registered the first patient under moves with its crosswalk entry.
    await a.crosswalk.keepPreventPatientId(LOCAL_IDS[0] ?? '', psid, PREVENT_ID);
    const pending = makeEvent({ patient_id: LOCAL_IDS[0], patient_service_id: psid });
    await a.webhook.enqueue(pending, Date.now());
    const letter = {
      event: makeEvent({ patient_id: LOCAL_IDS[1], patient_service_id: psids[1] }),
      channel: 'webhook',
      last_error: { code: 'ERR_WEBHOOK_GONE', status: 410, message: 'gone' },
      attempts: 1,
      first_attempt_at: null,
      last_attempt_at: null,
      dead_lettered_at: new Date().toISOString(),
    };
    await a.deadLetters.add(letter);
    const outboundEvent = makeEvent({ patient_id: LOCAL_IDS[0], patient_service_id: psid });
    await a.outbound.deliver(outboundEvent);
    await a.outbound.close();

    const env = {
      CROSSWALK_KEY: secretB,
      OLD_CROSSWALK_KEY: secretA,
      OUTBOUND_KEY: outboundB,
      OLD_OUTBOUND_KEY: outboundA,
    };
    const flags = [
      '--crosswalk-from-env',
      'OLD_CROSSWALK_KEY',
      '--outbound-from-env',
      'OLD_OUTBOUND_KEY',
    ];

    // A dry run counts and changes nothing.
    const dry = await rotateCli(env, ...flags, '--dry-run');
    expect(dry.code, dry.lines.join('\n')).toBe(0);
    expect(dry.output).toContain('crosswalk        resealed 2  already 0  unreadable 0');
    expect(await a.crosswalk.localIdOf(psid)).toBe(LOCAL_IDS[0]);

    const run = await rotateCli(env, ...flags);
    expect(run.code, run.lines.join('\n')).toBe(0);
    for (const line of [
      'crosswalk        resealed 2  already 0  unreadable 0',
      'records          resealed 2  already 0  unreadable 0',
      'fhir_ids         resealed 1  already 0  unreadable 0',
      'pending_events   resealed 1  already 0  unreadable 0',
      'dead_letters     resealed 1  already 0  unreadable 0',
      'outbound_events  resealed 1  already 0  unreadable 0',
    ]) {
      expect(run.output).toContain(line);
    }
    // No old or new key in anything the command printed.
    for (const secret of Object.values(env)) expect(run.lines.join('\n')).not.toContain(secret);

    // Everything reads back under key B...
    const b = stores(keysB, outboundB);
    for (const [i, localId] of LOCAL_IDS.entries()) {
      expect(await b.crosswalk.find(localId)).toBe(psids[i]);
      expect(await b.crosswalk.localIdOf(psids[i] ?? '')).toBe(localId);
      expect(await b.crosswalk.resolve(localId)).toEqual({
        patientServiceId: psids[i],
        created: false,
      });
    }
    expect(await b.records.get(psid)).toMatchObject({
      record: samplePatient,
      clinical: emptyClinicalRecord(),
    });
    expect(await b.crosswalk.fhirIdOf(psid, opaque)).toBe(FHIR_ID);
    expect(await b.crosswalk.preventPatientIdOf(LOCAL_IDS[0] ?? '', psid)).toBe(PREVENT_ID);
    expect(
      await b.crosswalk.preventPatientIdOf(LOCAL_IDS[1] ?? '', psids[1] ?? ''),
    ).toBeUndefined();
    const started = await b.webhook.begin(pending.id, pending.id, queryKeyOf(pending), Date.now());
    expect(started).toMatchObject({ kind: 'go', event: pending });
    expect(await b.deadLetters.get(letter.event.id)).toEqual(letter);
    const [job] = await b.outbound.queue.getJobs(['wait']);
    expect(openOutboundEvent(job?.data, outboundB)).toEqual(outboundEvent);

    // ...and nothing opens with key A any more.
    const oldKeys = stores(keysA, outboundA);
    for (const localId of LOCAL_IDS) expect(await oldKeys.crosswalk.find(localId)).toBeUndefined();
    await expect(oldKeys.crosswalk.localIdOf(psid)).rejects.toThrow();
    await expect(oldKeys.records.get(psid)).rejects.toThrow();
    await expect(oldKeys.crosswalk.fhirIdOf(psid, opaque)).rejects.toThrow();
    await expect(oldKeys.deadLetters.get(letter.event.id)).rejects.toThrow();
    expect(() => openOutboundEvent(job?.data, outboundA)).toThrow(/no OUTBOUND_KEY given opens/);
    // The forward entries under A's lookup key are gone: one per patient remains, none plain.
    expect(await scanRedisFor(redis.redis, redis.prefix, LOCAL_IDS)).toEqual([]);
    const forward = (await redisKeys(redis.redis, redis.prefix)).filter((k) =>
      k.startsWith(`${redis.prefix}:xw:`),
    );
    expect(forward.sort()).toEqual(
      LOCAL_IDS.map((id) => `${redis.prefix}:xw:${keysB.lookup(id)}`).sort(),
    );

    // A second run (a rotation interrupted and started again) finds everything done.
    const again = await rotateKeys({
      redis: redis.redis,
      prefix: redis.prefix,
      crosswalk: { from: keysA, to: keysB },
      outbound: { from: outboundA, to: outboundB, queueName: QUEUE },
    });
    expect(again).toEqual({
      crosswalk: { resealed: 0, already: 2, unreadable: 0 },
      records: { resealed: 0, already: 2, unreadable: 0 },
      fhir_ids: { resealed: 0, already: 1, unreadable: 0 },
      pending_events: { resealed: 0, already: 1, unreadable: 0 },
      dead_letters: { resealed: 0, already: 1, unreadable: 0 },
      outbound_events: { resealed: 0, already: 1, unreadable: 0 },
    });
    await b.outbound.close();
    await oldKeys.outbound.close();
  });

  it('leaves what neither key opens as it is and says so (exit 1)', async () => {
    const keysA = deriveCrosswalkKeys(generateCrosswalkSecret());
    const a = stores(keysA, newOutboundKey());
    await a.crosswalk.resolve(LOCAL_IDS[0] ?? '');
    await a.outbound.close();
    const run = await rotateCli(
      { CROSSWALK_KEY: generateCrosswalkSecret(), WRONG_OLD_KEY: generateCrosswalkSecret() },
      '--crosswalk-from-env',
      'WRONG_OLD_KEY',
    );
    expect(run.code).toBe(1);
    expect(run.output).toContain('crosswalk        resealed 0  already 0  unreadable 1');
    expect(await a.crosswalk.localIdOf((await a.crosswalk.find(LOCAL_IDS[0] ?? '')) ?? '')).toBe(
      LOCAL_IDS[0],
    );
  });
});
