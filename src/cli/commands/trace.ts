import type { Command } from 'commander';
import { crosswalkKeysFrom } from '../../app/compose-app.ts';
import { patientAdminFor } from '../../app/patient-admin-for.ts';
import type { Config } from '../../config/config-schema.ts';
import { loadConfig } from '../../config/load-config.ts';
import { createLogger } from '../../observability/logger.ts';
import { cliActor } from '../../privacy/audit-actor.ts';
import { UnknownPatientError } from '../../privacy/unknown-patient-error.ts';
import { Partitions } from '../../queues/partitions.ts';
import type { RedisClient } from '../../queues/redis-client.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import {
  MAX_PATIENT_MESSAGES,
  MessageTraceReader,
  type ReceiptTrace,
} from '../../trace/message-trace-reader.ts';
import { openTraceRaw } from '../../trace/trace-raw.ts';
import { CliInputError } from '../cli-errors.ts';
import { respond, type CommandResult } from '../command-output.ts';
import { wholeNumber } from '../option-parsers.ts';
import { valueOrStdinLine } from '../stdin-line.ts';
import { TraceNotFoundError } from './trace-not-found-error.ts';
import { messageText } from './trace-text.ts';
import { auditCliAction } from '../cli-audit.ts';

interface TraceOptions {
  patient?: string;
  json?: boolean;
  raw?: boolean;
  limit?: number;
}

/** `trace <control-id> [--raw]`: every receipt of the control id, the sealed messages opened. */
async function byControlId(
  config: Config,
  redis: RedisClient,
  controlId: string,
  raw: boolean,
): Promise<CommandResult> {
  const reader = new MessageTraceReader({ redis, space: Partitions.of(config.redis) });
  // The keys first: without them --raw fails before anything is read.
  const keys = raw ? crosswalkKeysFrom(config) : undefined;
  const trace = await reader.byControlId(controlId, { sealedRaw: raw });
  if (trace.receipts.length === 0) {
    throw new TraceNotFoundError(
      `no trace of control id ${controlId} (never received, expired after trace.retention_days, or the trace is off)`,
    );
  }
  if (keys === undefined) return { json: trace, text: messageText(trace).join('\n') };

  const sealed = trace.receipts.filter((r) => r.raw !== undefined);
  if (sealed.length === 0) {
    throw new TraceNotFoundError(
      `no receipt of control id ${controlId} holds the message (trace.keep_raw was off)`,
    );
  }
  const opened = new Map<ReceiptTrace, string>();
  let unreadable = 0;
  for (const receipt of sealed) {
    try {
      opened.set(receipt, openTraceRaw(keys, controlId, receipt.raw as string));
    } catch {
      unreadable += 1;
    }
  }
  // The messages are patient data: who saw how many is audited before they are shown.
  const logger = createLogger({ name: 'cli', level: config.log.level });
  try {
    await auditCliAction({ config, redis, logger }, 'show_raw', {
      raw_messages: opened.size,
      unreadable,
    });
  } finally {
    logger.flush();
  }
  // The JSON carries the opened message instead of the sealed `raw`.
  const receipts = trace.receipts.map((receipt) => {
    const { raw: _sealed, ...rest } = receipt;
    const message = opened.get(receipt);
    return message === undefined ? rest : { ...rest, message };
  });
  const lines = messageText(trace, opened);
  if (unreadable > 0) {
    lines.push('', `${unreadable} sealed message(s) could not be opened with these crosswalk keys`);
  }
  return { json: { ...trace, receipts }, text: lines.join('\n') };
}

/** `trace --patient <local id>`: the patient's messages, newest first; audited. */
async function byPatient(
  config: Config,
  redis: RedisClient,
  localId: string,
  limit: number | undefined,
): Promise<CommandResult> {
  const keys = crosswalkKeysFrom(config);
  const logger = createLogger({ name: 'cli', level: config.log.level });
  const handle = patientAdminFor({ config, redis, keys, logger });
  try {
    const report = await handle.admin.traceOf(localId, { actor: cliActor() }, { limit });
    if (report.messages.length === 0) {
      throw new TraceNotFoundError(
        `no message kept for this patient (patient_service_id ${report.patient_service_id}; audit request id ${report.request_id})`,
      );
    }
    const lines = [
      `patient_service_id ${report.patient_service_id}: ${report.messages.length} message(s), newest first`,
    ];
    for (const message of report.messages) lines.push('', ...messageText(message));
    if (report.skipped > 0) lines.push('', `${report.skipped} unreadable entries skipped`);
    lines.push('', `audit request id ${report.request_id}`);
    return { json: report, text: lines.join('\n') };
  } catch (err) {
    if (!(err instanceof UnknownPatientError)) throw err;
    throw new TraceNotFoundError(
      `unknown patient: nothing to show (audit request id ${err.requestId})`,
      { cause: err },
    );
  } finally {
    await handle.close();
    logger.flush();
  }
}

/**
 * `concordance-worker trace <control-id> [--json] [--raw]` and
 * `trace --patient <local id> [--json] [--limit n]`: what became of a message (docs/message-trace.md).
 * Exit 0 when something was found, 1 when nothing is kept (`ERR_TRACE_NOT_FOUND`) or on a failure,
 * 2 on a usage error.
 */
export function registerTraceCommand(program: Command): void {
  program
    .command('trace')
    .description(
      'follow a message by its control id (or a patient’s messages): answer, queries, submission, polls, result, delivery',
    )
    .argument('[control-id]', 'the sender’s control id (MSH-10, FHIR event number, event_id)')
    .option(
      '--patient <id>',
      "instead: the hospital's patient id (needs CROSSWALK_KEY; audited); - reads it from standard input",
    )
    .option(
      '--raw',
      'also print the messages as received, when kept (trace.keep_raw; needs CROSSWALK_KEY; audited)',
    )
    .option(
      '--limit <n>',
      `with --patient: messages at most, newest first (default 50)`,
      wholeNumber(1, MAX_PATIENT_MESSAGES),
    )
    .option('--json', 'print the trace as JSON')
    .action(async (controlId: string | undefined, options: TraceOptions) => {
      await respond(options.json, async () => {
        if ((controlId === undefined) === (options.patient === undefined)) {
          throw new CliInputError('give a control id or --patient, not both or neither');
        }
        if (options.raw === true && controlId === undefined) {
          throw new CliInputError('--raw takes a control id, not --patient');
        }
        if (options.limit !== undefined && controlId !== undefined) {
          throw new CliInputError('--limit goes with --patient');
        }
        const localId =
          options.patient === undefined
            ? undefined
            : await valueOrStdinLine(options.patient, '--patient');
        if (localId === '') throw new CliInputError('--patient: an empty patient id');
        const config = loadConfig({ file: program.opts<{ config?: string }>().config });
        const redis = requestConnection(config.redis, 'cw-trace', { enableOfflineQueue: true });
        try {
          return localId === undefined
            ? await byControlId(config, redis, controlId as string, options.raw === true)
            : await byPatient(config, redis, localId, options.limit);
        } finally {
          await redis.quit();
        }
      });
    });
}
