import { randomUUID } from 'node:crypto';
import { Worker, type Job } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openOutboundEvent } from '../../../src/delivery/open-outbound-event.ts';
import type { OutboundEvent } from '../../../src/delivery/outbound-event.ts';
import { OutboundKeyIdError, OutboundKeyring } from '../../../src/delivery/outbound-keyring.ts';
import { OutboundQueueChannel } from '../../../src/delivery/outbound-queue-channel.ts';
import { keyIdOf } from '../../../src/identity/crosswalk-keyring.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import type { RedisClient } from '../../../src/queues/redis-client.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { newOutboundKey } from '../../support/outbound.ts';
import { isolatedRedis, testRedisClient, testRedisEnv } from '../../support/redis.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';
import { makeEvent } from './delivery-fixture.ts';

const QUEUE = 'concordance-results';
/** Events each producer hands over per step. */
const PER_STEP = 12;
/** Events the consumer takes per step (fewer than are produced: a backlog waits). */
const CONSUMED_PER_STEP = 8;

let redis: Awaited<ReturnType<typeof isolatedRedis>>;
let consumerConnection: RedisClient;
const closers: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  redis = await isolatedRedis();
  consumerConnection = testRedisClient();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await consumerConnection.quit();
  await redis.cleanup();
});

/** A worker process's outbound channel, sealing with `key` (`OUTBOUND_KEY` text or a keyring). */
function producer(key: string | OutboundKeyring): OutboundQueueChannel {
  const channel = new OutboundQueueChannel({
    connection: redis.redis,
    prefix: redis.prefix,
    name: QUEUE,
    // Every consumed event kept, so that the end can check each one.
    retention: { count: 100_000, age_s: 86_400, waiting_age_s: 86_400 },
    key,
  });
  closers.push(() => channel.close());
  return channel;
}

/** `concordance-worker keys ARGS` with the outbound keyring `outboundKeys`. */
async function keysCli(outboundKeys: string, ...args: string[]) {
  const cli = new CliProcess(['keys', ...args], {
    ...testRedisEnv(),
    REDIS_PREFIX: redis.prefix,
    CROSSWALK_KEY: generateCrosswalkSecret(),
    OUTBOUND_KEYS: outboundKeys,
  });
  const code = await cli.exited;
  return { code, output: cli.lines.join('\n') };
}

describe('live OUTBOUND_KEY rotation', () => {
  it('moves the outbound queue through the phases while events flow and a consumer opens them: nothing lost, everything under the new key at the end', async () => {
    const [oldKey, newKey] = [newOutboundKey(), newOutboundKey()];
    /** Every event handed over: its id and its patient id. */
    const produced = new Map<string, string>();
    /** What the consumer opened: event id → patient id. */
    const consumed = new Map<string, string | null>();
    const consumerErrors: unknown[] = [];

    async function produce(channel: OutboundQueueChannel, count: number): Promise<void> {
      for (let i = 0; i < count; i += 1) {
        const patientId = `MRN-OUTROT-${randomUUID()}`;
        const event = makeEvent({ patient_id: patientId });
        produced.set(event.id, patientId);
        await channel.deliver(event);
      }
    }

    // The hospital's consumer: takes jobs one by one and opens each with the keyring it holds now.
    const token = randomUUID();
    const consumer = new Worker<OutboundEvent>(QUEUE, null, {
      connection: consumerConnection,
      prefix: redis.prefix,
    });
    closers.push(() => consumer.close());
    async function consume(count: number, keys: OutboundKeyring): Promise<void> {
      for (let i = 0; i < count; i += 1) {
        const job: Job<OutboundEvent> | undefined = await consumer.getNextJob(token, {
          block: false,
        });
        if (job === undefined) return;
        try {
          consumed.set(job.id ?? '', openOutboundEvent(job.data, keys).patient_id);
          await job.moveToCompleted('opened', token, false);
        } catch (err) {
          consumerErrors.push(err);
          await job.moveToFailed(err as Error, token, false);
        }
      }
    }

    // Phase 0: OUTBOUND_KEY=<old> everywhere.
    const consumer0 = OutboundKeyring.legacy(oldKey);
    const [a0, b0] = [producer(oldKey), producer(oldKey)];
    await Promise.all([
      produce(a0, PER_STEP),
      produce(b0, PER_STEP),
      consume(CONSUMED_PER_STEP, consumer0),
    ]);

    // Phase 1: the consumer gets the new key (readable), the workers still seal under 0.
    const consumer1 = OutboundKeyring.parse(`0:${oldKey},o1:${newKey}`);
    await Promise.all([
      produce(a0, PER_STEP),
      produce(b0, PER_STEP),
      consume(CONSUMED_PER_STEP, consumer1),
    ]);

    // Phase 2, a rolling restart: one worker seals under o1 while the other still seals under 0,
    // then both under o1.
    const phase2 = `o1:${newKey},0:${oldKey}`;
    const a2 = producer(OutboundKeyring.parse(phase2));
    await Promise.all([
      produce(a2, PER_STEP),
      produce(b0, PER_STEP),
      consume(CONSUMED_PER_STEP, consumer1),
    ]);
    const b2 = producer(OutboundKeyring.parse(phase2));
    await Promise.all([
      produce(a2, PER_STEP),
      produce(b2, PER_STEP),
      consume(CONSUMED_PER_STEP, consumer1),
    ]);
    // A consumer that skipped phase 1 would be refused by name, not by a garbled decryption.
    const [newest] = await a2.queue.getJobs(['wait'], 0, 0, false);
    expect(keyIdOf(newest?.data.patient_id_sealed ?? '')).toBe('o1');
    let refused: unknown;
    try {
      openOutboundEvent(newest?.data, consumer0);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(OutboundKeyIdError);
    expect((refused as OutboundKeyIdError).code).toBe('ERR_OUTBOUND_KEY_ID');

    const before = await keysCli(phase2, 'status');
    expect(before.output).toContain('outbound keys    o1, 0 (sealing: o1)');
    const left = /outbound left\s+(\d+) under 0: run keys rotate --live/.exec(before.output);
    expect(Number(left?.[1])).toBeGreaterThan(0);
    expect(before.code).toBe(1);

    // Phase 3: the re-seal, while the workers hand events over and the consumer takes them.
    const [moved] = await Promise.all([
      keysCli(phase2, 'rotate', '--live'),
      produce(a2, PER_STEP),
      produce(b2, PER_STEP),
      consume(CONSUMED_PER_STEP, consumer1),
    ]);
    expect(moved.code).toBe(0);
    const resealed = /outbound_events\s+resealed (\d+)\s+already (\d+)\s+unreadable 0/.exec(
      moved.output,
    );
    expect(Number(resealed?.[1])).toBeGreaterThan(0);
    expect(moved.output).toContain('done: re-sealed under outbound key id "o1"');

    const after = await keysCli(phase2, 'status');
    expect(after.output).toContain(
      'outbound left    0: nothing rests under 0; remove it from OUTBOUND_KEYS',
    );
    expect(after.code).toBe(0);

    // Phase 4: the old key goes, from the workers and from the consumer.
    const consumer4 = OutboundKeyring.parse(`o1:${newKey}`);
    const [a4, b4] = [producer(consumer4), producer(OutboundKeyring.parse(`o1:${newKey}`))];
    await Promise.all([
      produce(a4, PER_STEP),
      produce(b4, PER_STEP),
      consume(CONSUMED_PER_STEP, consumer4),
    ]);

    // Nothing lost: every event handed over is in the queue (waiting or consumed), and each one
    // opens under the final key alone, with its own patient id.
    expect(consumerErrors).toEqual([]);
    const jobs = await a4.queue.getJobs(
      ['wait', 'active', 'delayed', 'prioritized', 'completed', 'failed'],
      0,
      -1,
    );
    expect(jobs.map((job) => job.id).sort()).toEqual([...produced.keys()].sort());
    const waiting = await a4.queue.getJobs(['wait'], 0, -1);
    expect(waiting.length).toBeGreaterThan(0);
    for (const job of jobs) {
      expect(keyIdOf(job.data.patient_id_sealed ?? '')).toBe('o1');
      expect(openOutboundEvent(job.data, consumer4).patient_id).toBe(produced.get(job.id ?? ''));
    }
    // The consumer opened what it took, each event's own patient id, whatever phase it was in.
    expect(consumed.size).toBeGreaterThan(0);
    for (const [id, patientId] of consumed) expect(patientId).toBe(produced.get(id));
    // `outbound open` reads the key id too: the final keyring opens the waiting events, a keyring
    // without o1 is refused by the id, with no patient id printed.
    const openCli = async (outboundKeys: string) => {
      const cli = new CliProcess(['outbound', 'open', '--from-queue', '--limit', '3'], {
        ...testRedisEnv(),
        REDIS_PREFIX: redis.prefix,
        OUTBOUND_KEYS: outboundKeys,
      });
      return { code: await cli.exited, stdout: cli.stdout, output: cli.lines.join('\n') };
    };
    const opened = await openCli(`o1:${newKey}`);
    expect(opened.code).toBe(0);
    expect(opened.stdout).toHaveLength(3);
    for (const line of opened.stdout) {
      const { id, patient_id: patientId } = JSON.parse(line) as { id: string; patient_id: string };
      expect(patientId).toBe(produced.get(id));
    }
    const unknown = await openCli(`0:${oldKey}`);
    expect(unknown.code).not.toBe(0);
    expect(unknown.output).toContain('an outbound event is sealed under key id "o1"');
    // No patient id in clear in Redis, and none (nor a key) in what the command line printed.
    const planted = [...produced.values()];
    expect(await scanRedisFor(redis.redis, redis.prefix, planted)).toEqual([]);
    for (const output of [before.output, moved.output, after.output, unknown.output]) {
      for (const hidden of [oldKey, newKey, ...planted]) expect(output).not.toContain(hidden);
    }
  }, 180_000);
});
