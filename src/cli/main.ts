#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { registerAuditCommand } from './commands/audit.ts';
import { registerConcordanceCommands } from './commands/concordance.ts';
import { registerConfigCommand } from './commands/config.ts';
import { registerImportCommand } from './commands/import.ts';
import { registerIngestCommands } from './commands/ingest.ts';
import { registerPatientCommands } from './commands/patient.ts';
import { registerKeysCommand } from './commands/keys.ts';
import { registerOutboundCommand } from './commands/outbound.ts';
import { registerPreventCommands } from './commands/prevent.ts';
import { registerRedisCommand } from './commands/redis.ts';
import { registerRelationshipsCommand } from './commands/relationships.ts';
import { registerReplayCommand } from './commands/replay.ts';
import { registerSimulatorCommand } from './commands/simulator.ts';
import { registerStatusCommand } from './commands/status.ts';
import { registerTraceCommand } from './commands/trace.ts';
import { registerWorkCommand } from './commands/work.ts';
import { describeError } from './describe-error.ts';
import { packageVersion } from './package-version.ts';

const program = new Command('concordance-worker')
  .description(
    'Runs preset concordance queries against the Clinical Graph Service when a record changes.',
  )
  .version(packageVersion())
  .option('-c, --config <file>', 'configuration file merged over config/default.yaml')
  .showHelpAfterError()
  .exitOverride();

registerConcordanceCommands(program);
registerPreventCommands(program);
registerRelationshipsCommand(program);
registerConfigCommand(program);
registerSimulatorCommand(program);
registerIngestCommands(program);
registerImportCommand(program);
registerWorkCommand(program);
registerReplayCommand(program);
registerStatusCommand(program);
registerPatientCommands(program);
registerAuditCommand(program);
registerTraceCommand(program);
registerOutboundCommand(program);
registerKeysCommand(program);
registerRedisCommand(program);

// Output piped into a reader that stops early (`| head`) ends the command quietly.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else {
    // Exit at once: a start-up that failed half-way may hold connections open.
    process.stderr.write(`concordance-worker: ${describeError(err)}\n`, () => process.exit(1));
  }
}
