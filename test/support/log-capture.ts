import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { REDACTED_PATHS } from '../../src/observability/logger.ts';

/** A real pino logger whose JSON lines the test can read, and wait on. */
export interface LogCapture {
  logger: Logger;
  lines: string[];
  /** Resolves with the first line (already written or still to come) that `match` accepts. */
  waitFor(match: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
}

export function captureLogs(level: pino.Level = 'debug'): LogCapture {
  const lines: string[] = [];
  const waiters: {
    match: (e: Record<string, unknown>) => boolean;
    resolve: (e: Record<string, unknown>) => void;
  }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        lines.push(line);
        const entry = JSON.parse(line) as Record<string, unknown>;
        for (const waiter of waiters.splice(0)) {
          if (waiter.match(entry)) waiter.resolve(entry);
          else waiters.push(waiter);
        }
      }
      done();
    },
  });
  const logger = pino(
    { level, redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' } },
    stream,
  );
  return {
    logger,
    lines,
    waitFor(match) {
      const seen = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}
