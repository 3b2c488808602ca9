import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { isConcordanceError } from '../errors/concordance-error.ts';
import { IdentifierLeakError } from '../records/prepare-for-service.ts';
import { ServiceError } from '../service/errors/service-error.ts';
import { ServiceParamsError } from '../service/errors/service-params-error.ts';
import { ServiceValidationError } from '../service/errors/service-validation-error.ts';
import { CliInputError, EXIT_CODES } from './cli-errors.ts';
import { describeError } from './describe-error.ts';

/** What a command prints: `json` with `--json`, `text` (a table) otherwise. */
export interface CommandResult {
  json: unknown;
  text: string;
  /** @defaultValue 0 */
  exitCode?: number;
}

/** The exit code of a failed command (docs/command-line.md, "Exit codes"). */
export function exitCodeOf(err: unknown): number {
  const refusedBeforeSending =
    err instanceof CliInputError ||
    err instanceof ServiceParamsError ||
    err instanceof IdentifierLeakError;
  return refusedBeforeSending ? EXIT_CODES.usage : EXIT_CODES.failed;
}

/** A failure as `--json` prints it: the stable `code`, the readable message, the `detail` items. */
export function errorJson(err: unknown): Record<string, unknown> {
  const json: Record<string, unknown> = {
    code: isConcordanceError(err) ? err.code : 'ERR_CLI_FAILED',
    message: describeError(err),
  };
  if (err instanceof ServiceError && err.status !== undefined) json.status = err.status;
  if (err instanceof ServiceValidationError || err instanceof CliInputError) {
    json.detail = err.items;
  }
  return json;
}

/** Notes for the person at the terminal (progress, what was removed): standard error. */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}

/**
 * Runs a command and prints its result on standard output, or its failure on standard error (one
 * line, or `{"error": …}` with `--json`), and sets the exit code.
 */
export async function respond(
  json: boolean | undefined,
  run: () => Promise<CommandResult>,
): Promise<void> {
  let result: CommandResult;
  try {
    result = await run();
  } catch (err) {
    process.exitCode = exitCodeOf(err);
    process.stderr.write(
      json === true
        ? `${JSON.stringify({ error: errorJson(err) }, null, 2)}\n`
        : `concordance-worker: ${describeError(err)}\n`,
    );
    return;
  }
  process.stdout.write(`${json === true ? JSON.stringify(result.json, null, 2) : result.text}\n`);
  if (result.exitCode !== undefined) process.exitCode = result.exitCode;
}

/**
 * The JSON file `path` checked against `schema`. A file that cannot be read, is not JSON or breaks
 * the schema is a {@link CliInputError} naming the option and the places at fault, never a value
 * (the parser's own message quotes the text, which may be patient data).
 */
export function readJsonFile<S extends z.ZodType>(
  path: string,
  option: string,
  schema: S,
  what: string,
): z.infer<S> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new CliInputError(`${option} ${path}: cannot read the file (${reason})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CliInputError(`${option} ${path}: not valid JSON`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new CliInputError(
      `${option} ${path}: not ${what}`,
      parsed.error.issues.map((issue) => ({
        loc: issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
        msg: issue.message,
      })),
    );
  }
  return parsed.data;
}
