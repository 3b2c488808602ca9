import type { Command } from 'commander';
import { runWorker } from '../../runtime/run-worker.ts';
import { runProcess } from '../run-process.ts';

/** `concordance-worker work`: runs the query workers until SIGINT/SIGTERM. */
export function registerWorkCommand(program: Command): void {
  program
    .command('work')
    .description('run the query workers (submit, poll, deliver), with /healthz, /readyz, /metrics')
    .action(() => runProcess(program, 'work', runWorker));
}
