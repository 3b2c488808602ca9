import { Queue } from 'bullmq';
import type { Config } from '../../src/config/config-schema.ts';
import type { OutboundEvent } from '../../src/delivery/outbound-event.ts';
import {
  benchPrefix,
  configFor,
  preparePatients,
  producer,
  scheduleQueries,
  startWorker,
  until,
  workerEnv,
  writeConfig,
  type BenchContext,
  type Producer,
  type RunningWorker,
} from './fixtures.ts';
import { clearRedis } from './processes.ts';

/**
 * One `concordance-worker work` child on its own key prefix against a simulator, with the
 * producer side, its prepared patients and the outbound queue its results are counted in.
 */
export interface WorkerLine {
  config: Config;
  producer: Producer;
  worker: RunningWorker;
  outbound: Queue<OutboundEvent>;
  /** Service ids of the prepared patients (crosswalk entry and record each). */
  patients: string[];
  /**
   * Schedules one query per patient in `patients` and resolves with the time (epoch ms) at which
   * the outbound queue holds `resultsWanted` events (checked every 250 ms).
   */
  run(
    patients: readonly string[],
    resultsWanted: number,
    options: { timeoutMs: number; what: string },
  ): Promise<number>;
  /** Stops the worker, closes the queues and deletes the line's keys. */
  close(): Promise<void>;
}

/**
 * Starts a line named `name` (key prefix, config file, patient ids) with `queries` as its
 * `queries` configuration and `patients` patients prepared before the worker starts.
 */
export async function startWorkerLine(
  ctx: BenchContext,
  options: { name: string; queries: object; simulatorUrl: string; patients: number },
): Promise<WorkerLine> {
  const { name, simulatorUrl } = options;
  const prefix = benchPrefix(ctx, name);
  const configPath = writeConfig(ctx, name, options.queries);
  const config = configFor(configPath, workerEnv(ctx, prefix, simulatorUrl, 0));
  const p = producer(ctx, config);
  const closeProducer = async () => {
    await p.close();
    await clearRedis(ctx.redis, prefix);
  };
  let patients: string[];
  let worker: RunningWorker;
  try {
    patients = await preparePatients(p, options.patients, `${name}-MRN`);
    worker = await startWorker(ctx, `${name} worker`, { configPath, prefix, simulatorUrl });
  } catch (err) {
    await closeProducer();
    throw err;
  }
  const outbound = new Queue<OutboundEvent>(config.delivery.outbound_queue.name, {
    connection: p.context.redis,
    prefix,
  });
  return {
    config,
    producer: p,
    worker,
    outbound,
    patients,
    async run(list, resultsWanted, { timeoutMs, what }) {
      await scheduleQueries(p, list);
      return until(async () => (await outbound.getWaitingCount()) >= resultsWanted, {
        everyMs: 250,
        timeoutMs,
        what,
      });
    },
    async close() {
      try {
        await outbound.close();
        await worker.stop();
      } finally {
        await closeProducer();
      }
    },
  };
}
