import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Queue } from 'bullmq';
import { openOutboundEvent } from '../../src/delivery/open-outbound-event.ts';
import type { ResultEvent } from '../../src/interface/result-event.ts';

/** A fresh `OUTBOUND_KEY` (32 random bytes, base64), as `openssl rand -base64 32` makes. */
export const newOutboundKey = (): string => randomBytes(32).toString('base64');

/** Config file lines that turn the outbound queue on (the key comes from `OUTBOUND_KEY`). */
export const OUTBOUND_QUEUE_LINES: readonly string[] = [
  'delivery:',
  '  outbound_queue: { enabled: true }',
];

/** The events in an outbound queue, opened with `key` as the hospital's consumer would. */
export async function openedEvents(queue: Queue, key: string): Promise<ResultEvent[]> {
  const jobs = await queue.getJobs(['wait', 'active', 'completed', 'delayed']);
  return jobs.map((job) => openOutboundEvent(job.data, key));
}

/** A config file of {@link OUTBOUND_QUEUE_LINES}, for processes started with `--config`. */
export function outboundConfigFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'cw-outbound-')), 'config.yaml');
  writeFileSync(file, OUTBOUND_QUEUE_LINES.join('\n'));
  return file;
}
