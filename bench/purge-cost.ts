/**
 * What a purge costs in a busy deployment: one patient purged among N others, each with a record
 * and a remembered update answer, N delayed queries and N result events waiting in the outbound
 * queue. Prints one JSON line. Works under a private key prefix of `REDIS_URL` and removes it.
 *
 *   node bench/purge-cost.ts [N]      (N = 10000 by default)
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../src/identity/crosswalk.ts';
import { createLogger } from '../src/observability/logger.ts';
import { PatientAdmin } from '../src/privacy/patient-admin.ts';
import { QueueJobEraser } from '../src/privacy/queue-job-eraser.ts';
import { scanKeys } from '../src/privacy/redis-keys.ts';
import { CONCORDANCE_QUERIES } from '../src/queues/queue-names.ts';

const others = Number(process.argv[2] ?? 10_000);
const prefix = `{cwbench-purge-${randomUUID()}}`;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});
const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
const queries = new Queue(CONCORDANCE_QUERIES, { connection: redis, prefix });
const outbound = new Queue('concordance-results', { connection: redis, prefix });

try {
  const crosswalk = new Crosswalk({ redis, prefix, keys });
  const { patientServiceId: target } = await crosswalk.resolve('MRN-BENCH');
  for (let start = 0; start < others; start += 1_000) {
    const pipeline = redis.pipeline();
    const batch = Array.from({ length: Math.min(1_000, others - start) }, () => randomUUID());
    for (const psid of batch) {
      pipeline.set(`${prefix}:idem:${randomUUID()}`, JSON.stringify({ patient_service_id: psid }));
      pipeline.hset(`${prefix}:rec:${psid}`, 'version', 1);
    }
    await pipeline.exec();
    await queries.addBulk(
      batch.map((psid) => ({
        name: 'query',
        data: { patientServiceId: psid },
        opts: { jobId: `q-${psid}-END002-1`, delay: 600_000 },
      })),
    );
    await outbound.addBulk(
      batch.map((psid) => ({ name: 'event', data: { patient_service_id: psid } })),
    );
  }
  await queries.add('query', {}, { jobId: `q-${target}-END002-1`, delay: 600_000 });
  await outbound.add('event', { patient_service_id: target });
  await redis.set(`${prefix}:idem:${randomUUID()}`, JSON.stringify({ patient_service_id: target }));
  const admin = new PatientAdmin({
    redis,
    prefix,
    keys,
    queue: queries,
    logger: createLogger({ name: 'bench', level: 'silent' }),
    erasers: [new QueueJobEraser('outbound_events', outbound, redis)],
  });
  const keysUnderPrefix = (await scanKeys(redis, `${prefix}*`)).length;
  const started = performance.now();
  const report = await admin.purge('MRN-BENCH', { actor: 'cli:bench' });
  const purgeMs = Math.round(performance.now() - started);
  process.stdout.write(
    `${JSON.stringify({ other_patients: others, keys_under_prefix: keysUnderPrefix, purge_ms: purgeMs, counts: report.counts })}\n`,
  );
} finally {
  const left = await scanKeys(redis, `${prefix}*`);
  for (let i = 0; i < left.length; i += 1_000) await redis.unlink(...left.slice(i, i + 1_000));
  await queries.close();
  await outbound.close();
  await redis.quit();
}
