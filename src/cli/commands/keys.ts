import { Queue } from 'bullmq';
import type { Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import { outboundKeyringOf, UnnamedOutboundKeys } from '../../delivery/outbound-keyring.ts';
import { WEBHOOK_DELIVERIES } from '../../delivery/webhook-deliveries-queue.ts';
import { crosswalkKeysFrom } from '../../app/compose-app.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../../identity/crosswalk-keys.ts';
import { rotateKeys, type RotationReport } from '../../identity/rotate-keys.ts';
import { CONCORDANCE_QUERIES } from '../../queues/queue-names.ts';
import { Partitions } from '../../queues/partitions.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { StartupError } from '../../config/startup-error.ts';

interface RotateOptions {
  crosswalkFromEnv?: string;
  outboundFromEnv?: string;
  dryRun?: boolean;
  force?: boolean;
  live?: boolean;
}

/** Prints a report, one line per kind of data; the number of unreadable items. */
function printReport(report: RotationReport): number {
  let unreadable = 0;
  for (const [kind, count] of Object.entries(report)) {
    unreadable += count.unreadable + (count.conflicts ?? 0);
    const conflicts = count.conflicts === undefined ? '' : `  conflicts ${count.conflicts}`;
    process.stdout.write(
      `${kind.padEnd(16)} resealed ${count.resealed}  already ${count.already}  unreadable ${count.unreadable}${conflicts}\n`,
    );
  }
  return unreadable;
}

type Config = ReturnType<typeof loadConfig>;

/** The outbound keyring (`OUTBOUND_KEYS` or `OUTBOUND_KEY`), or undefined when neither is set. */
function outboundKeyring(config: Config) {
  try {
    return outboundKeyringOf(config.delivery.outbound_queue);
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
}

/**
 * The live re-seal's keys: every older key of CROSSWALK_KEYS to its sealing key, and every older
 * key of OUTBOUND_KEYS to its sealing key (the outbound queue's events); either is undefined when
 * its keyring holds one key.
 */
function liveRotations(config: Config) {
  const crosswalk = crosswalkKeysFrom(config);
  const outbound = outboundKeyring(config);
  const outboundRotation = outbound?.rotation();
  return {
    crosswalk,
    outbound,
    rotation: crosswalk.rotation(),
    outboundRotation:
      outboundRotation === undefined
        ? undefined
        : { ...outboundRotation, queueName: config.delivery.outbound_queue.name },
  };
}

/** The status's last line for one keyring: what is left under its older keys. */
function remainingLine(
  label: string,
  variable: string,
  older: readonly string[],
  remaining: number,
  unreadable: number,
): string {
  return remaining === 0 && unreadable === 0
    ? `${label.padEnd(16)} 0: nothing rests under ${older.join(', ')}; remove it from ${variable}\n`
    : `${label.padEnd(16)} ${remaining} under ${older.join(', ')}` +
        (remaining > 0 ? ': run keys rotate --live' : '') +
        (unreadable > 0
          ? `; ${unreadable} unreadable or in conflict, which a re-seal leaves as they are (docs/security-and-privacy.md, key rotation)`
          : '') +
        '\n';
}

function fromEnv(variable: string): string {
  const value = process.env[variable];
  if (value === undefined || value === '') throw new StartupError(`${variable} is not set`);
  return value;
}

/**
 * `concordance-worker keys`: a fresh key, and the re-sealing of everything under a new
 * `CROSSWALK_KEY` / `OUTBOUND_KEY`. The old keys are named by environment variable, never given
 * on the command line (where `ps` and shell history would see them).
 */
export function registerKeysCommand(program: Command): void {
  const keys = program.command('keys').description('encryption keys: generate, rotate');
  keys
    .command('generate')
    .description('print a fresh random key (32 bytes, base64) for CROSSWALK_KEY or OUTBOUND_KEY')
    .action(() => {
      process.stdout.write(`${generateCrosswalkSecret()}\n`);
    });
  keys
    .command('status')
    .description(
      'how much rests under each key of CROSSWALK_KEYS and OUTBOUND_KEYS other than its sealing key (what keys rotate --live would move); changes nothing',
    )
    .action(async () => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      const { crosswalk, outbound, rotation, outboundRotation } = liveRotations(config);
      process.stdout.write(
        `crosswalk keys   ${crosswalk.ids.join(', ')} (sealing: ${crosswalk.sealingId})\n`,
      );
      if (outbound !== undefined) {
        process.stdout.write(
          `outbound keys    ${outbound.ids.join(', ')} (sealing: ${outbound.sealingId})\n`,
        );
      }
      if (rotation === undefined && outboundRotation === undefined) {
        process.stdout.write('remaining        0 (one key: nothing to move)\n');
        return;
      }
      const redis = requestConnection(config.redis, 'cw-keys-status', { enableOfflineQueue: true });
      try {
        const report = await rotateKeys({
          redis,
          prefix: Partitions.of(config.redis),
          crosswalk: rotation,
          outbound: outboundRotation,
          dryRun: true,
        });
        printReport(report);
        const { outbound_events: events, ...crosswalkKinds } = report;
        let left = 0;
        if (rotation === undefined) {
          process.stdout.write('remaining        0 (one crosswalk key: nothing to move)\n');
        } else {
          const counts = Object.values(crosswalkKinds);
          const remaining = counts.reduce((sum, count) => sum + count.resealed, 0);
          const unreadable = counts.reduce(
            (sum, count) => sum + count.unreadable + (count.conflicts ?? 0),
            0,
          );
          left += remaining + unreadable;
          process.stdout.write(
            remainingLine('remaining', 'CROSSWALK_KEYS', rotation.from.ids, remaining, unreadable),
          );
        }
        if (outboundRotation !== undefined) {
          left += events.resealed + events.unreadable;
          process.stdout.write(
            remainingLine(
              'outbound left',
              'OUTBOUND_KEYS (and from the consumer)',
              outboundRotation.from.ids,
              events.resealed,
              events.unreadable,
            ),
          );
        }
        if (left > 0) process.exitCode = 1;
      } finally {
        await redis.quit();
      }
    });
  keys
    .command('rotate')
    .description(
      're-seal everything under the new CROSSWALK_KEY / OUTBOUND_KEY (as configured) that the old key (named by --*-from-env) sealed; run with the pipeline stopped; safe to run again. With --live: re-seal what rests under the older keys of CROSSWALK_KEYS and OUTBOUND_KEYS with their sealing keys, while updates flow',
    )
    .option(
      '--live',
      'move everything under the older keys of CROSSWALK_KEYS and OUTBOUND_KEYS to their first (sealing) keys while the pipeline runs (see docs/security-and-privacy.md, key rotation)',
    )
    .option(
      '--crosswalk-from-env <variable>',
      'the environment variable holding the old CROSSWALK_KEY',
    )
    .option(
      '--outbound-from-env <variable>',
      'the environment variable holding the old OUTBOUND_KEY',
    )
    .option('--dry-run', 'count what would be re-sealed and change nothing')
    .option('--force', 'run even though queue workers are connected (not recommended)')
    .action(async (options: RotateOptions) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      if (options.live === true) {
        if (options.crosswalkFromEnv !== undefined || options.outboundFromEnv !== undefined) {
          throw new StartupError(
            '--live takes its keys from CROSSWALK_KEYS and OUTBOUND_KEYS: no --crosswalk-from-env / --outbound-from-env',
          );
        }
        const { crosswalk, outbound, rotation, outboundRotation } = liveRotations(config);
        if (rotation === undefined && outboundRotation === undefined) {
          throw new StartupError(
            `CROSSWALK_KEYS holds one key (id "${crosswalk.sealingId}")` +
              (outbound === undefined
                ? ''
                : ` and OUTBOUND_KEYS one (id "${outbound.sealingId}")`) +
              ': nothing rests under another key',
          );
        }
        const redis = requestConnection(config.redis, 'cw-keys-rotate', {
          enableOfflineQueue: true,
        });
        try {
          const report = await rotateKeys({
            redis,
            prefix: Partitions.of(config.redis),
            crosswalk: rotation,
            outbound: outboundRotation,
            dryRun: options.dryRun === true,
          });
          const unreadable = printReport(report);
          const moved = [
            ...(rotation === undefined ? [] : [`crosswalk key id "${rotation.to.sealingId}"`]),
            ...(outboundRotation === undefined
              ? []
              : [`outbound key id "${outboundRotation.to.sealingId}"`]),
          ].join(' and ');
          const older = [
            ...(rotation?.from.ids ?? []),
            ...(outboundRotation?.from.ids.map((id) => `outbound ${id}`) ?? []),
          ].join(', ');
          process.stdout.write(
            options.dryRun === true
              ? 'dry run: nothing changed\n'
              : unreadable === 0
                ? `done: re-sealed under ${moved}; check with keys status before removing ${older}\n`
                : `${unreadable} item(s) unreadable or in conflict were left as they are\n`,
          );
          if (unreadable > 0) process.exitCode = 1;
        } finally {
          await redis.quit();
        }
        return;
      }
      if (options.crosswalkFromEnv === undefined && options.outboundFromEnv === undefined) {
        throw new StartupError('name an old key: --crosswalk-from-env and/or --outbound-from-env');
      }
      let crosswalk;
      if (options.crosswalkFromEnv !== undefined) {
        const to = config.identity.crosswalk_key;
        if (to === undefined) throw new StartupError('CROSSWALK_KEY (the new key) is not set');
        const from = fromEnv(options.crosswalkFromEnv);
        if (from.trim() === to.trim()) {
          throw new StartupError(`${options.crosswalkFromEnv} and CROSSWALK_KEY are the same key`);
        }
        crosswalk = { from: deriveCrosswalkKeys(from), to: deriveCrosswalkKeys(to) };
      }
      let outbound;
      if (options.outboundFromEnv !== undefined) {
        const to = config.delivery.outbound_queue.key;
        if (to === undefined) {
          throw new StartupError(
            config.delivery.outbound_queue.keys === undefined
              ? 'OUTBOUND_KEY (the new key) is not set'
              : 'OUTBOUND_KEYS is rotated with --live (list the old key in it); --outbound-from-env takes OUTBOUND_KEY',
          );
        }
        const from = fromEnv(options.outboundFromEnv);
        if (from.trim() === to.trim()) {
          throw new StartupError(`${options.outboundFromEnv} and OUTBOUND_KEY are the same key`);
        }
        // Derived now: a malformed old key fails before anything is read.
        const old = new UnnamedOutboundKeys([from]);
        outbound = { from: old, to, queueName: config.delivery.outbound_queue.name };
      }
      const redis = requestConnection(config.redis, 'cw-keys-rotate', {
        enableOfflineQueue: true,
      });
      try {
        if (options.force !== true && options.dryRun !== true) {
          const queues = Partitions.of(config.redis).prefixes.flatMap((prefix) =>
            [CONCORDANCE_QUERIES, WEBHOOK_DELIVERIES].map((name) => ({ name, prefix })),
          );
          for (const { name, prefix } of queues) {
            const queue = new Queue(name, { connection: redis, prefix });
            const workers = await queue.getWorkersCount().finally(() => queue.close());
            if (workers > 0) {
              throw new StartupError(
                `${workers} worker(s) of ${name} are connected: stop the pipeline first (or --force)`,
              );
            }
          }
        }
        const report: RotationReport = await rotateKeys({
          redis,
          prefix: Partitions.of(config.redis),
          crosswalk,
          outbound,
          dryRun: options.dryRun === true,
        });
        const unreadable = printReport(report);
        process.stdout.write(
          options.dryRun === true
            ? 'dry run: nothing changed\n'
            : unreadable === 0
              ? 'done: everything is under the new key(s)\n'
              : `${unreadable} item(s) open with neither key and were left as they are\n`,
        );
        if (unreadable > 0) process.exitCode = 1;
      } finally {
        await redis.quit();
      }
    });
}
