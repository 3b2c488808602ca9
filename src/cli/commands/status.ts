import type { Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import {
  readPipelineStatus,
  type PipelineStatus,
  type QueueStatus,
} from '../../runtime/pipeline-status.ts';
import { formatTable } from '../format-table.ts';

/** `1.5 s`, `12 min 5 s`, `2 h 0 min`, `3 d 4 h`. */
export function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1_000);
  if (s < 60) return `${(ms / 1_000).toFixed(1)} s`;
  if (s < 3_600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3_600)} h`;
}

function pausedCell(queue: QueueStatus): string {
  if (queue.auth_paused) return 'yes (API key refused)';
  return queue.paused ? 'yes' : 'no';
}

/** Each partition's submissions: waiting, delayed, active, and those retrying after a failure. */
function submissionLines(status: PipelineStatus): string[] {
  const now = Date.parse(status.generated_at);
  return status.submissions.map((s) => {
    const where = status.partitions > 1 ? ` (partition ${s.partition})` : '';
    const retrying = `${s.retrying}${s.complete ? '' : '+'} retrying after a failure`;
    const last =
      s.last_error === null
        ? ''
        : ` (last error: ${s.last_error}` +
          (s.last_error_at === null ? ')' : `, ${formatDuration(now - s.last_error_at)} ago)`);
    return `queries waiting to be submitted${where}: ${s.waiting} waiting, ${s.delayed} delayed, ${s.active} active; ${retrying}${last}`;
  });
}

/** The service's health per host, as the workers last reported it. */
function serviceLines(status: PipelineStatus): string[] {
  if (status.service.length === 0) return ['service: no worker has reported a request yet'];
  const now = Date.parse(status.generated_at);
  const ago = (at: number | null) => (at === null ? 'never' : `${formatDuration(now - at)} ago`);
  return status.service.map((h) => {
    const state =
      h.up || h.last_failure === null
        ? 'up'
        : `FAILING: ${h.last_failure.status} on ${h.last_failure.endpoint}, ${h.consecutive_failures} failed requests in a row`;
    return (
      `service ${h.host}: ${state}; last success ${ago(h.last_success_at)}, ` +
      `last failure ${ago(h.last_failure_at)} (reported ${ago(h.reported_at)})`
    );
  });
}

export function statusTable(status: PipelineStatus): string {
  // With partitions, each partition's queues are named `<queue> [p<n>]`.
  const nameOf = (q: QueueStatus) =>
    status.partitions > 1 ? `${q.name} [p${q.partition}]` : q.name;
  const table = formatTable(
    [
      'queue',
      'waiting',
      'delayed',
      'active',
      'completed',
      'failed',
      'paused',
      'rate limited',
      'oldest waiting',
    ],
    status.queues.map((q) => [
      nameOf(q),
      String(q.counts.waiting + q.counts.prioritized),
      String(q.counts.delayed),
      String(q.counts.active),
      String(q.counts.completed),
      String(q.counts.failed),
      pausedCell(q),
      q.rate_limited_ms === null ? 'no' : `for ${formatDuration(q.rate_limited_ms)}`,
      q.oldest_waiting_age_ms === null ? '-' : formatDuration(q.oldest_waiting_age_ms),
    ]),
  );
  const unmapped =
    status.unmapped_problems.length === 0
      ? ['unmapped problem codes: none']
      : [
          'unmapped problem codes (most reported first; see terminology.* in docs/configuration.md):',
          formatTable(
            ['system', 'code', 'reports'],
            status.unmapped_problems.map((u) => [u.system, u.code, String(u.count)]),
          ),
        ];
  return [
    table,
    '',
    `dead letters: ${status.dead_letters.count}`,
    `queries waiting for a birth date: ${status.waiting_for_demographics.count}`,
    ...status.polls.map(
      (p) =>
        `submitted queries being polled${status.partitions > 1 ? ` (partition ${p.partition})` : ''}: ${p.queries}, due ${p.due}` +
        (p.oldest_due_ms === null
          ? ''
          : `, oldest due ${Math.round(p.oldest_due_ms / 1_000)} s ago`) +
        (p.held_ms === null ? '' : `, held ${Math.ceil(p.held_ms / 1_000)} s for a rate limit`),
    ),
    ...submissionLines(status),
    ...serviceLines(status),
    ...unmapped,
    status.partitions > 1
      ? `(Redis prefix ${status.prefix}, ${status.partitions} partitions, ${status.generated_at})`
      : `(Redis prefix ${status.prefix}, ${status.generated_at})`,
  ].join('\n');
}

/** The URL without its credentials, for messages. */
function where(url: string): string {
  try {
    const { protocol, host } = new URL(url);
    return `${protocol}//${host}`;
  } catch {
    return 'REDIS_URL';
  }
}

/** `concordance-worker status [--json]`: queues, holds and dead letters, read from Redis. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description(
      'queue counts, paused or rate-limited queues, the oldest waiting job, dead letters, retrying submissions, the service health',
    )
    .option('--json', 'print one JSON document instead of a table')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      const redis = requestConnection(config.redis, 'cw-status', {
        commandTimeoutMs: config.redis.command_timeout_ms,
        lazyConnect: true,
        retryStrategy: () => null,
      });
      redis.on('error', () => undefined);
      try {
        try {
          await redis.connect();
        } catch (err) {
          throw new Error(`Redis at ${where(config.redis.url)} is unreachable`, { cause: err });
        }
        const status = await readPipelineStatus({ config, redis });
        process.stdout.write(
          `${opts.json ? JSON.stringify(status, null, 2) : statusTable(status)}\n`,
        );
      } finally {
        redis.disconnect();
      }
    });
}
