import { Queue } from 'bullmq';
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import { openOutboundEvent } from '../../delivery/open-outbound-event.ts';
import {
  outboundKeyringOf,
  UnnamedOutboundKeys,
  type OutboundKeys,
} from '../../delivery/outbound-keyring.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { StartupError } from '../../config/startup-error.ts';

interface OpenOptions {
  fromQueue?: boolean;
  limit: number;
  alsoKeyEnv?: string;
}

function count(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number >= 1');
  return n;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** One JSON value (an event, a job `{data}`, or an array of them) or one per line. */
function eventsIn(text: string): unknown[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  let values: unknown[];
  try {
    const parsed: unknown = JSON.parse(trimmed);
    values = Array.isArray(parsed) ? parsed : [parsed];
  } catch {
    values = trimmed
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as unknown);
  }
  // A BullMQ job carries the event in `data` (a JSON string in `job.asJSON()`).
  return values.map((v) => {
    if (typeof v !== 'object' || v === null || !('data' in v) || 'patient_id_sealed' in v) return v;
    const { data } = v as { data: unknown };
    return typeof data === 'string' ? (JSON.parse(data) as unknown) : data;
  });
}

/**
 * `concordance-worker outbound open`: opens outbound-queue events (sealed `patient_id`) with
 * `OUTBOUND_KEYS` or `OUTBOUND_KEY`, as the hospital's consumer does; prints one opened event per line. For
 * operators checking a consumer, and as a reference for writing one.
 */
export function registerOutboundCommand(program: Command): void {
  const outbound = program.command('outbound').description('the outbound results queue');
  outbound
    .command('open')
    .description(
      'open events of the outbound queue with OUTBOUND_KEYS (the key each event names) or OUTBOUND_KEY: JSON on stdin (an event, a job, an array, or one per line), or --from-queue; prints the events with their plain patient_id, one per line',
    )
    .option('--from-queue', 'read the oldest waiting events of the configured queue (not consumed)')
    .option('--limit <n>', 'with --from-queue: how many', count, 10)
    .option(
      '--also-key-env <variable>',
      'also try the key in this environment variable (the old key, during an offline rotation; with OUTBOUND_KEYS, list it there instead)',
    )
    .action(async (options: OpenOptions) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      const { key, keys: ring } = config.delivery.outbound_queue;
      // Derived once, not per event. OUTBOUND_KEYS opens each event with the key its id names;
      // OUTBOUND_KEY (and --also-key-env) are tried in turn whatever the id.
      let keys: OutboundKeys;
      if (ring !== undefined) {
        if (options.alsoKeyEnv !== undefined) {
          throw new StartupError(
            'with OUTBOUND_KEYS, list the old key in it (<id>:<secret>) instead of --also-key-env',
          );
        }
        try {
          keys = outboundKeyringOf(config.delivery.outbound_queue) as OutboundKeys;
        } catch (err) {
          throw new StartupError((err as Error).message);
        }
      } else {
        if (key === undefined) {
          throw new StartupError('OUTBOUND_KEY (or OUTBOUND_KEYS) is not set: nothing can open');
        }
        const texts = [key];
        if (options.alsoKeyEnv !== undefined) {
          const also = process.env[options.alsoKeyEnv];
          if (also === undefined || also === '') {
            throw new StartupError(`${options.alsoKeyEnv} is not set`);
          }
          texts.push(also);
        }
        keys = new UnnamedOutboundKeys(texts);
      }
      let events: unknown[];
      if (options.fromQueue === true) {
        const redis = requestConnection(config.redis, 'cw-outbound-open', {
          enableOfflineQueue: true,
        });
        const queue = new Queue(config.delivery.outbound_queue.name, {
          connection: redis,
          prefix: config.redis.prefix,
        });
        try {
          const jobs = await queue.getJobs(['wait'], 0, options.limit - 1, true);
          events = jobs.map((job) => job.data as unknown);
        } finally {
          await queue.close();
          await redis.quit();
        }
      } else {
        events = eventsIn(await readStdin());
      }
      for (const event of events) {
        process.stdout.write(`${JSON.stringify(openOutboundEvent(event, keys))}\n`);
      }
    });
}
