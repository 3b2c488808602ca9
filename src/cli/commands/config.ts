import { Option, type Command } from 'commander';
import { ConfigError } from '../../config/config-error.ts';
import { loadConfig } from '../../config/load-config.ts';
import { ROLES, roleProblems, type Role } from '../../runtime/role-problems.ts';

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
    .action((opts: { role: Role }) => {
      const file = program.opts<{ config?: string }>().config;
      try {
        const loaded = loadConfig({ file });
        const problems = roleProblems(loaded, opts.role);
        if (problems.length > 0) throw new ConfigError(problems);
        process.stdout.write(`configuration is valid for ${opts.role}\n`);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stdout.write(`${err.message}\n`);
        process.exitCode = 1;
      }
    });
}
