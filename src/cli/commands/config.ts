import { Option, type Command } from 'commander';
import { ConfigError } from '../../config/config-error.ts';
import { loadConfig } from '../../config/load-config.ts';
import { serviceUrlWarnings } from '../../config/service-url-warnings.ts';
import { webhookTransportWarnings } from '../../config/webhook-transport.ts';
import { ROLES, roleProblems, type Role } from '../../runtime/role-problems.ts';
import { redisPersistenceLine } from './redis-persistence-line.ts';

/**
 * `concordance-worker config check [--role ingest|work|start]`: validates the configuration as the
 * role's start-up does — the same `loadConfig` and the same `roleProblems` — and lists every
 * problem by path. Without `--role`, the checks of `start` (ingest and workers together).
 */
export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('inspect the configuration');
  config
    .command('check')
    .description('validate the configuration (defaults, --config file, environment) for a role')
    .addOption(
      new Option('--role <role>', 'the role whose start-up checks to run')
        .choices(ROLES)
        .default('start'),
    )
    .action(async (opts: { role: Role }) => {
      const file = program.opts<{ config?: string }>().config;
      try {
        const loaded = loadConfig({ file });
        // What the role's start-up logs as a warning (a plain http:// webhook, allowed).
        if (opts.role !== 'ingest') {
          for (const { message, host } of webhookTransportWarnings(loaded)) {
            process.stdout.write(`warning: delivery.webhook.url: ${message} (host ${host})\n`);
          }
        }
        const problems = roleProblems(loaded, opts.role);
        // A warning, not a problem: the demo and the tests run with the local service.
        for (const { path, message } of serviceUrlWarnings(loaded)) {
          process.stdout.write(`warning: ${path}: ${message}\n`);
        }
        // Whether Redis keeps the crosswalk on disk (docs/backup-and-recovery.md): never a problem.
        process.stdout.write(`${await redisPersistenceLine(loaded)}\n`);
        if (problems.length > 0) throw new ConfigError(problems);
        process.stdout.write(`configuration is valid for ${opts.role}\n`);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stdout.write(`${err.message}\n`);
        process.exitCode = 1;
      }
    });
}
