/**
 * What a purge costs in a busy deployment: one patient purged among N others, each with a record
 * and a remembered update answer, N delayed queries and N result events waiting in the outbound
 * queue. Prints one JSON line. Works under a private key prefix of `REDIS_URL` and removes it.
 *
 *   node bench/purge-cost.ts [N]      (N = 10000 by default)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { App } from '../src/app/compose-app.ts';
import { loadConfig } from '../src/config/load-config.ts';
import { generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import { createLogger } from '../src/observability/logger.ts';
import { scanKeys } from '../src/privacy/redis-keys.ts';

const others = Number(process.argv[2] ?? 10_000);
const prefix = `{cwbench-purge-${randomUUID()}}`;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});
// The stores and the purge as `ingest` builds them, with the outbound queue on.
const config = loadConfig({
  env: {
    REDIS_PREFIX: prefix,
    CROSSWALK_KEY: generateCrosswalkSecret(),
    OUTBOUND_KEY: randomBytes(32).toString('base64'),
  },
});
const app = App.compose(
  {
    ...config,
    delivery: {
      ...config.delivery,
      outbound_queue: { ...config.delivery.outbound_queue, enabled: true },
    },
  },
  createLogger({ name: 'bench', level: 'silent' }),
  { redis },
);
const queries = app.queriesQueue(redis);
const outbound = new Queue(app.config.delivery.outbound_queue.name, { connection: redis, prefix });
const patientAdmin = app.patientAdmin([queries]);

try {
  const { patientServiceId: target } = await app.crosswalk.resolve('MRN-BENCH');
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
  const { admin } = patientAdmin;
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
  await patientAdmin.close();
  await queries.close();
  await outbound.close();
  await redis.quit();
}
