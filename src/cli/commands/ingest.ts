import type { Command } from 'commander';
import { runAll } from '../../runtime/run-all.ts';
import { runIngest } from '../../runtime/run-ingest.ts';
import { runProcess } from '../run-process.ts';

/** `concordance-worker ingest` and `concordance-worker start` (ingest and workers together). */
export function registerIngestCommands(program: Command): void {
  program
    .command('ingest')
    .description('serve the ingest API (record updates, presets) on INGEST_PORT')
    .action(() => runProcess(program, 'ingest', runIngest));
  program
    .command('start')
    .description('run ingest and the workers in one process')
    .action(() => runProcess(program, 'start', runAll));
}
