import type { Command } from 'commander';
import { preventIdentifier } from '../../identity/prevent-identifier.ts';
import { PreventRequestSchema } from '../../interface/prevent.ts';
import { CliInputError } from '../cli-errors.ts';
import { respond, readJsonFile } from '../command-output.ts';
import { formatObject } from '../format-object.ts';
import { formatTable } from '../format-table.ts';
import { serviceContext } from '../service-context.ts';
import { valueOrStdinLine } from '../stdin-line.ts';

/**
 * The file of `prevent recommend`: the Prevent request body's three objects. The patient comes
 * from `--patient-service-id`; any other key is refused (a misspelt object would be lost).
 */
const PreventBodyFileSchema = PreventRequestSchema.omit({ patient_service_id: true }).strict();

/**
 * `concordance-worker prevent register | recommend`: the Prevent API by hand (interface 4.3 and
 * 5.4). `register --identifier` sends the identifier as given (the caller keeps the crosswalk);
 * `register --local-id` sends what the workers send for that patient, the keyed hash.
 */
export function registerPreventCommands(program: Command): void {
  const prevent = program
    .command('prevent')
    .description('create a per-patient service identifier, and ask for Prevent recommendations');

  prevent
    .command('register')
    .description('POST the patient identifier once; prints the patient_service_id the service made')
    .option(
      '--identifier <id>',
      'the unique patient identifier as it is sent; - reads it from standard input (kept out of ps)',
    )
    .option(
      '--local-id <id>',
      'register a local patient id as the workers do: the identifier sent is its keyed hash ' +
        '(PREVENT_ID_KEY), never the id; - reads it from standard input',
    )
    .option('--json', 'print JSON instead of a table')
    .action((opts: { identifier?: string; localId?: string; json?: boolean }) =>
      respond(opts.json, async () => {
        if ((opts.identifier === undefined) === (opts.localId === undefined)) {
          throw new CliInputError('give one of --identifier and --local-id');
        }
        const { config, client } = serviceContext(program);
        let identifier: string;
        if (opts.localId === undefined) {
          identifier = await valueOrStdinLine(opts.identifier ?? '', '--identifier');
        } else {
          const key = config.prevent.id_key;
          if (key === undefined) {
            throw new CliInputError(
              '--local-id needs PREVENT_ID_KEY, the key the workers hash local ids with (docs/prevent.md)',
            );
          }
          identifier = preventIdentifier(key)(await valueOrStdinLine(opts.localId, '--local-id'));
        }
        const id = await client.prevent.registerPatient(identifier);
        return {
          json: { patient_service_id: id },
          text: formatTable(['patient_service_id'], [[id]]),
        };
      }),
    );

  prevent
    .command('recommend')
    .description('behaviour-change recommendations for a registered patient')
    .requiredOption('--patient-service-id <id>', 'the identifier `prevent register` printed')
    .requiredOption(
      '--body <file>',
      'JSON file with patient_biomarkers, patient_history and patient_demographics',
    )
    .option('--json', 'print JSON instead of a table')
    .action((opts: { patientServiceId: string; body: string; json?: boolean }) =>
      respond(opts.json, async () => {
        const { client } = serviceContext(program);
        const body = readJsonFile(
          opts.body,
          '--body',
          PreventBodyFileSchema,
          'a Prevent request body (patient_biomarkers, patient_history, patient_demographics)',
        );
        const answer = await client.prevent.recommend({
          patient_service_id: opts.patientServiceId,
          ...body,
        });
        return { json: answer, text: formatObject(answer) };
      }),
    );
}
