import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Paths whose values never reach a log line: credentials, and anything that may carry a patient's
 * record or local identifiers. Redaction is configuration, not a habit of each call site.
 */
export const REDACTED_PATHS: readonly string[] = [
  'apiKey',
  'api_key',
  '*.apiKey',
  '*.api_key',
  'headers["x-api-key"]',
  'headers["x-admin-key"]',
  'headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers["x-admin-key"]',
  '*.headers.authorization',
  'authorization',
  'secret',
  '*.secret',
];

export interface CreateLoggerOptions {
  /** @defaultValue 'info' */
  level?: LoggerOptions['level'];
  /** The process's role (`ingest`, `work`, `simulator`, `cli`). */
  name: string;
  /** Where lines go; tests pass a stream to read them. @defaultValue standard error */
  destination?: pino.DestinationStream;
}

/** JSON lines on standard error, so that standard output stays free for command results. */
export function createLogger({ level = 'info', name, destination }: CreateLoggerOptions): Logger {
  return pino(
    {
      name,
      level,
      redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ fd: 2, sync: false }),
  );
}
