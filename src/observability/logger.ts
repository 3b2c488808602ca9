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
  '*.authorization',
  'headers.cookie',
  '*.headers.cookie',
  // Secrets: webhook signing secrets, the crosswalk key, bearer tokens.
  'secret',
  '*.secret',
  'webhook_secret',
  '*.webhook_secret',
  'webhookSecret',
  '*.webhookSecret',
  'crosswalk_key',
  '*.crosswalk_key',
  'token',
  '*.token',
  'tokens',
  '*.tokens',
  // The hospital's own patient ids (the random patient_service_id may be logged).
  'patient_id',
  '*.patient_id',
  'patientId',
  '*.patientId',
  'localId',
  '*.localId',
  'local_id',
  '*.local_id',
  // Records and what the service says about them.
  'assembled_patient',
  '*.assembled_patient',
  'record',
  '*.record',
  'concordance',
  '*.concordance',
  // Request and event bodies carry all of the above.
  'body',
  '*.body',
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
