import type { Logger } from 'pino';
import type { ImportState } from './import-state.ts';

/** What a run reports as it goes (counts only: never a resource or a patient id). */
export interface ImportProgress {
  /** A checkpoint of the first phase (lines of the files spread into buckets). */
  spreading(state: ImportState): void;
  /** A bucket committed. */
  committing(state: ImportState): void;
  finish(state: ImportState): void;
}

/** The run's position: phase, fraction done (0..1) and a short account. */
export function progressOf(state: ImportState): { phase: string; fraction: number; text: string } {
  const files = state.files ?? [];
  if (state.phase === 'spreading') {
    const lines = files.reduce((n, f) => n + f.lines_done, 0);
    const total = files.reduce((n, f) => n + (f.count ?? 0), 0);
    const filesDone = files.filter((f) => f.done).length;
    const fraction = total > 0 ? lines / total : files.length > 0 ? filesDone / files.length : 0;
    return {
      phase: 'reading',
      fraction: Math.min(1, fraction),
      text: `files ${filesDone}/${files.length}, lines ${lines}`,
    };
  }
  const buckets = state.buckets.length;
  return {
    phase: state.phase === 'done' ? 'done' : 'committing',
    fraction: buckets === 0 ? 1 : state.buckets_done / buckets,
    text: `buckets ${state.buckets_done}/${buckets}, patients ${state.summary.patients}, queries ${state.summary.queries_opened}`,
  };
}

const BAR = 30;

/** A bar on a terminal (stderr), redrawn in place. */
export class TerminalProgress implements ImportProgress {
  readonly #out: NodeJS.WritableStream;

  constructor(out: NodeJS.WritableStream) {
    this.#out = out;
  }

  #draw(state: ImportState): void {
    const { phase, fraction, text } = progressOf(state);
    const filled = Math.round(fraction * BAR);
    const bar = `${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}`;
    this.#out.write(
      `\r[${bar}] ${String(Math.round(fraction * 100)).padStart(3)}% ${phase}: ${text}\x1b[K`,
    );
  }

  spreading(state: ImportState): void {
    this.#draw(state);
  }

  committing(state: ImportState): void {
    this.#draw(state);
  }

  finish(state: ImportState): void {
    this.#draw(state);
    this.#out.write('\n');
  }
}

/** Log lines (not a terminal): one per `everyMs` at most, and one at the end. */
export class LogProgress implements ImportProgress {
  readonly #logger: Logger;
  readonly #everyMs: number;
  readonly #now: () => number;
  #last = Number.NEGATIVE_INFINITY;

  constructor(logger: Logger, { everyMs = 5_000, now = Date.now } = {}) {
    this.#logger = logger;
    this.#everyMs = everyMs;
    this.#now = now;
  }

  #line(state: ImportState, force: boolean): void {
    const at = this.#now();
    if (!force && at - this.#last < this.#everyMs) return;
    this.#last = at;
    const { phase, fraction, text } = progressOf(state);
    this.#logger.info(
      { run_id: state.run_id, phase, percent: Math.round(fraction * 100) },
      `bulk import ${phase}: ${text}`,
    );
  }

  spreading(state: ImportState): void {
    this.#line(state, false);
  }

  committing(state: ImportState): void {
    this.#line(state, false);
  }

  finish(state: ImportState): void {
    this.#line(state, true);
  }
}
