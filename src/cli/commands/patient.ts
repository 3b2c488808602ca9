import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import { createLogger } from '../../observability/logger.ts';
import { cliActor } from '../../privacy/audit-actor.ts';
import type { PatientAdmin } from '../../privacy/patient-admin.ts';
import { UnknownPatientError } from '../../privacy/unknown-patient-error.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { crosswalkKeysFrom } from '../../app/compose-app.ts';
import { patientAdminFor } from '../../app/patient-admin-for.ts';
import { valueOrStdinLine } from '../stdin-line.ts';
import { registerPatientDuplicates } from './patient-duplicates.ts';

interface PatientOptions {
  patientId: string;
  yes?: boolean;
  json?: boolean;
}

/** `--patient-id -` reads the id from the first line of standard input (kept out of `ps`). */
const patientIdOf = (raw: string) => valueOrStdinLine(raw, '--patient-id');

async function confirmed(options: PatientOptions): Promise<boolean> {
  if (options.yes === true) return true;
  if (!process.stdin.isTTY) {
    throw new Error('refusing to purge without --yes (standard input is not a terminal)');
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(
      'This erases the patient’s record, presets, queries and pending events. Type "purge" to go on: ',
    );
    return answer.trim() === 'purge';
  } finally {
    rl.close();
  }
}

/** Runs `act` with a PatientAdmin on its own connection; an unknown patient exits 1. */
async function withAdmin<T>(
  program: Command,
  act: (admin: PatientAdmin) => Promise<T>,
  json: boolean | undefined,
  describe: (result: T) => string[],
): Promise<void> {
  const config = loadConfig({ file: program.opts<{ config?: string }>().config });
  const keys = crosswalkKeysFrom(config);
  const redis = requestConnection(config.redis, 'cw-patient', { enableOfflineQueue: true });
  const logger = createLogger({ name: 'cli', level: config.log.level });
  const handle = patientAdminFor({ config, redis, keys, logger });
  try {
    const result = await act(handle.admin);
    process.stdout.write(
      json === true ? `${JSON.stringify(result, null, 2)}\n` : `${describe(result).join('\n')}\n`,
    );
  } catch (err) {
    if (!(err instanceof UnknownPatientError)) throw err;
    throw new Error(`unknown patient: nothing changed (audit request id ${err.requestId})`, {
      cause: err,
    });
  } finally {
    await handle.close();
    await redis.quit();
    logger.flush();
  }
}

const counts = (c: Record<string, number>) =>
  Object.entries(c)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');

/** `concordance-worker patient purge|opt-out|opt-in --patient-id ID`. */
export function registerPatientCommands(program: Command): void {
  const patient = program
    .command('patient')
    .description(
      'erase a patient, opt a patient out of (or back into) concordance queries, or count duplicates',
    );
  registerPatientDuplicates(patient, program);

  patient
    .command('purge')
    .description(
      'erase everything stored about a patient (record, presets, crosswalk entry, queries, pending events); audited',
    )
    .requiredOption(
      '--patient-id <id>',
      "the hospital's patient id; - reads it from standard input",
    )
    .option('--yes', 'do not ask for confirmation')
    .option('--json', 'print the report as JSON')
    .action(async (options: PatientOptions) => {
      const localId = await patientIdOf(options.patientId);
      if (!(await confirmed(options))) {
        process.stdout.write('not purged\n');
        return;
      }
      await withAdmin(
        program,
        (admin) => admin.purge(localId, { actor: cliActor() }),
        options.json,
        (r) => [
          `purged: ${counts(r.counts)}`,
          ...(r.kept.length > 0 ? [`kept (opted out): ${r.kept.join(', ')}`] : []),
          `audit request id ${r.request_id}`,
        ],
      );
    });

  patient
    .command('opt-out')
    .description('stop all concordance queries for a patient (records are still accepted); audited')
    .requiredOption(
      '--patient-id <id>',
      "the hospital's patient id; - reads it from standard input",
    )
    .option('--json', 'print the report as JSON')
    .action(async (options: PatientOptions) => {
      const localId = await patientIdOf(options.patientId);
      await withAdmin(
        program,
        (admin) => admin.optOut(localId, { actor: cliActor() }),
        options.json,
        (r) => [
          `opted out since ${r.opted_out_at} (patient_service_id ${r.patient_service_id}); ${r.queries_cancelled} waiting query(ies) cancelled`,
          `audit request id ${r.request_id}`,
        ],
      );
    });

  patient
    .command('opt-in')
    .description('lift an opt-out: the next record update schedules queries again; audited')
    .requiredOption(
      '--patient-id <id>',
      "the hospital's patient id; - reads it from standard input",
    )
    .option('--json', 'print the report as JSON')
    .action(async (options: PatientOptions) => {
      const localId = await patientIdOf(options.patientId);
      await withAdmin(
        program,
        (admin) => admin.optIn(localId, { actor: cliActor() }),
        options.json,
        (r) => [
          r.was_opted_out
            ? `opted in (patient_service_id ${r.patient_service_id})`
            : `was not opted out: nothing changed (patient_service_id ${r.patient_service_id})`,
          `audit request id ${r.request_id}`,
        ],
      );
    });
}
