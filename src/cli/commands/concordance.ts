import { createHmac, randomBytes } from 'node:crypto';
import { InvalidArgumentError, type Command } from 'commander';
import { loadCcsrTables } from '../../ccsr/ccsr-tables.ts';
import { ccsrCategorySchema } from '../../ingest/schemas/ccsr-category.ts';
import { AssembledPatientSchema } from '../../interface/assembled-patient.ts';
import { prepareForService } from '../../records/prepare-for-service.ts';
import { FREE_TEXT_KINDS, type FreeTextKind } from '../../records/strip-free-text.ts';
import type { ConcordanceJob } from '../../service/create-service-client.ts';
import { EXIT_CODES } from '../cli-errors.ts';
import { note, respond, readJsonFile, type CommandResult } from '../command-output.ts';
import { formatObject } from '../format-object.ts';
import { formatTable } from '../format-table.ts';
import { wholeNumber } from '../option-parsers.ts';
import { serviceContext } from '../service-context.ts';
import { valueOrStdinLine } from '../stdin-line.ts';
import { waitForJob } from '../wait-for-job.ts';

interface SubmitOptions {
  record: string;
  category: string;
  localId?: string;
  wait?: boolean;
  timeout?: number;
  json?: boolean;
}

/** A real CCSR v2023.1 problem category (placeholders refused), as the ingest API checks it. */
function ccsrCategory(raw: string): string {
  const parsed = ccsrCategorySchema(loadCcsrTables()).safeParse(raw);
  if (!parsed.success) {
    throw new InvalidArgumentError(parsed.error.issues[0]?.message ?? 'not a CCSR category');
  }
  return parsed.data;
}

/**
 * Opaque stand-ins for FHIR references (`Condition/abc` -> `ref-…`), keyed with a secret of this
 * run only: stable within one submission, and mapped back by nobody (the pipeline keeps its own
 * map in Redis; the command line keeps none).
 */
function runOpaqueFhirIds(): (fhirId: string) => Promise<string> {
  const key = randomBytes(32);
  return async (fhirId) =>
    `ref-${createHmac('sha256', key).update(fhirId).digest('base64url').slice(0, 22)}`;
}

const removedText = (removed: Record<FreeTextKind, number>) =>
  FREE_TEXT_KINDS.filter((kind) => removed[kind] > 0)
    .map((kind) => `${removed[kind]} ${kind}`)
    .join(', ');

/** The job's fields in a table, then its concordance (whatever its shape) below. */
function jobText(fields: Record<string, string>, concordance: unknown): string {
  const head = formatTable(Object.keys(fields), [Object.values(fields)]);
  const body =
    typeof concordance === 'object' && concordance !== null && !Array.isArray(concordance)
      ? formatObject(concordance as Record<string, unknown>)
      : 'concordance: none';
  return `${head}\n\n${body}`;
}

function jobResult(jobId: string, job: ConcordanceJob): CommandResult {
  const raw = job.raw as Record<string, unknown>;
  return {
    json: { job_id: jobId, state: job.state, ...raw },
    text: jobText({ job_id: jobId, status: job.status, state: job.state }, job.concordance),
  };
}

/** `concordance-worker concordance submit | get`: the service's concordance endpoints by hand. */
export function registerConcordanceCommands(program: Command): void {
  const concordance = program
    .command('concordance')
    .description('submit a concordance query by hand, and read a job');

  concordance
    .command('submit')
    .description(
      'de-identify an AssembledPatient as the pipeline does, submit it, and print the job id',
    )
    .requiredOption('--record <file>', 'the AssembledPatient, a JSON file')
    .requiredOption(
      '--category <code>',
      'the problem-list item, a CCSR v2023.1 category (e.g. END002)',
      ccsrCategory,
    )
    .option(
      '--local-id <id>',
      "the hospital's id of the patient: never sent, and a record still holding it is refused; - reads it from standard input",
    )
    .option('--wait', 'poll until the job ends (queries.poll schedule) and print its result')
    .option(
      '--timeout <seconds>',
      'with --wait: give up after this long (default queries.poll.deadline_ms)',
      wholeNumber(1),
    )
    .option('--json', 'print JSON instead of a table')
    .action((opts: SubmitOptions) =>
      respond(opts.json, async () => {
        const { config, client } = serviceContext(program);
        const record = readJsonFile(
          opts.record,
          '--record',
          AssembledPatientSchema,
          'an AssembledPatient',
        );
        const localId =
          opts.localId === undefined ? '' : await valueOrStdinLine(opts.localId, '--local-id');
        const removed = Object.fromEntries(FREE_TEXT_KINDS.map((kind) => [kind, 0])) as Record<
          FreeTextKind,
          number
        >;
        const payload = await prepareForService(record, {
          localId,
          identifyingFields: config.privacy.identifying_fields,
          metadataAllowedKeys: config.privacy.metadata_allowed_keys,
          opaqueFhirId: runOpaqueFhirIds(),
          onRemoved: (kind, count) => {
            removed[kind] += count;
          },
        });
        if (removedText(removed) !== '') {
          note(`removed before sending (free text, identifying fields): ${removedText(removed)}`);
        }
        const submittedAt = Date.now();
        const { jobId } = await client.concordance.submit({
          assembled_patient: payload,
          ccsr_category: opts.category,
        });
        const submitted = { job_id: jobId, ccsr_category: opts.category };
        if (opts.wait !== true) {
          return {
            json: { ...submitted, removed },
            text: formatTable(['job_id', 'ccsr_category'], [[jobId, opts.category]]),
          };
        }
        note(`submitted job ${jobId}; waiting for it to end`);
        const poll = config.queries.poll;
        let lastStatus: string | undefined;
        const waited = await waitForJob(client, jobId, {
          submittedAt,
          schedule: {
            firstDelayMs: poll.first_delay_ms,
            factor: poll.factor,
            maxDelayMs: poll.max_delay_ms,
            jitter: poll.jitter,
            deadlineMs: opts.timeout === undefined ? poll.deadline_ms : opts.timeout * 1_000,
          },
          onPoll: (job) => {
            if (job.status !== lastStatus) note(`job ${jobId}: ${job.status}`);
            lastStatus = job.status;
          },
        });
        const ended = {
          ...submitted,
          outcome: waited.outcome,
          status: waited.job?.status ?? null,
          concordance: waited.job?.concordance ?? null,
          ...(waited.failure === undefined ? {} : { error: waited.failure }),
        };
        if (waited.failure !== undefined) {
          note(
            `concordance-worker: the job ended ${waited.outcome}: ${waited.failure.code}: ${waited.failure.message}`,
          );
        }
        return {
          json: { ...ended, removed },
          text: jobText(
            {
              job_id: jobId,
              ccsr_category: opts.category,
              outcome: waited.outcome,
              status: ended.status ?? '-',
            },
            ended.concordance,
          ),
          ...(waited.outcome === 'completed' ? {} : { exitCode: EXIT_CODES.noResult }),
        };
      }),
    );

  concordance
    .command('get <job_id>')
    .description('read a concordance job: its status and, once it ended, its concordance')
    .option('--json', 'print JSON instead of a table')
    .action((jobId: string, opts: { json?: boolean }) =>
      respond(opts.json, async () =>
        jobResult(jobId, await serviceContext(program).client.concordance.get(jobId)),
      ),
    );
}
