/**
 * How soon webhook deliveries resume after a receiver outage, with the default retry schedule:
 *
 *   node tools/measure-webhook-recovery.ts [outage seconds = 60] [probe_interval_ms = 5000]
 *
 * 40 events on 10 keys are handed over while a real receiver answers 503; after the outage it
 * answers 204, and the script prints one JSON line: seconds from the receiver's return to the first
 * and to the last delivery. Uses REDIS_URL (default redis://127.0.0.1:6379) under a key prefix of
 * its own, removed at the end. A figure, not a test.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { loadConfig } from '../src/config/load-config.ts';
import { App } from '../src/app/compose-app.ts';
import { generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import { workerConnection } from '../src/queues/redis-connections.ts';
import { startWebhookReceiver } from './webhook-receiver.ts';

const outageS = Number(process.argv[2] ?? 60);
const probeMs = Number(process.argv[3] ?? 5_000);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const EVENTS = 40;
const KEYS = 10;

const secret = `whsec_${randomBytes(24).toString('base64')}`;
let down = true;
const receiver = await startWebhookReceiver({ secret, respond: () => (down ? 503 : 204) });
const prefix = `{cwmeasure-${randomUUID()}}`;
const base = loadConfig({
  env: {
    WEBHOOK_URL: receiver.url,
    WEBHOOK_SECRET: secret,
    REDIS_PREFIX: prefix,
    CROSSWALK_KEY: generateCrosswalkSecret(),
  },
});
const config = {
  ...base,
  delivery: {
    ...base.delivery,
    webhook: { ...base.delivery.webhook, probe_interval_ms: probeMs },
  },
};
const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
// The delivery side as `work` builds it.
const app = App.compose(config, pino({ level: 'silent' }), { redis });
const routing = app.deliveryRouter(redis);
const connection = workerConnection(redisUrl, 'cw-measure-recovery');
const webhook = await app.webhookDeliveries(connection, 0);

const ids: string[] = [];
for (let i = 0; i < EVENTS; i++) {
  const id = randomUUID();
  ids.push(id);
  await routing.router.deliver({
    id,
    type: 'concordance.completed',
    created_at: new Date().toISOString(),
    patient_id: `MRN-MEASURE-${i}`,
    patient_service_id: `psid-${i % KEYS}`,
    ccsr_category: 'END002',
    record_version: 1,
    triggered_by: { event_ids: [], count: 1, first_update_at: null, last_update_at: null },
    remote_job_id: null,
    status: 'completed',
    concordance: {},
    error: null,
  });
}
await sleep(outageS * 1_000);
down = false;
const up = Date.now();
await receiver.until((r) => ids.every((id) => r.events.some((e) => e.webhookId === id)));
const done = Date.now();
const first = Math.min(...receiver.events.map((e) => e.receivedAt));
process.stdout.write(
  `${JSON.stringify({
    outage_s: outageS,
    probe_interval_ms: probeMs,
    events: EVENTS,
    keys: KEYS,
    attempts: receiver.attempts.length,
    seconds_to_first_delivery: (first - up) / 1_000,
    seconds_to_all_delivered: (done - up) / 1_000,
  })}\n`,
);

await webhook.worker.close();
await webhook.queue.close();
connection.disconnect();
await routing.close();
let cursor = '0';
do {
  const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
  cursor = next;
  if (found.length > 0) await redis.unlink(...found);
} while (cursor !== '0');
await redis.quit();
await receiver.close();
