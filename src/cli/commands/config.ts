import type { Command } from 'commander';
import { ConfigError } from '../../config/config-error.ts';
import { loadConfig } from '../../config/load-config.ts';
import { deliveryConfigProblems } from '../../delivery/delivery-config-problems.ts';

/** `concordance-worker config check`: validates the configuration and lists every problem. */
export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('inspect the configuration');
  config
    .command('check')
    .description('validate the configuration (defaults, --config file, environment)')
    .action(() => {
      const file = program.opts<{ config?: string }>().config;
      try {
        const config = loadConfig({ file });
        // What `start` and `work` refuse too: results with nowhere to go, a channel without its key.
        const problems = deliveryConfigProblems(config);
        if (problems.length > 0) throw new ConfigError(problems);
        process.stdout.write('configuration is valid\n');
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stdout.write(`${err.message}\n`);
        process.exitCode = 1;
      }
    });
}
