import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const MAIN = new URL('../src/cli/main.ts', import.meta.url).pathname;

/** A `concordance-worker` child process whose log lines (stderr) and output the test can read. */
export class CliProcess {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly stdout: string[] = [];
  readonly #waiters: { match: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  readonly exited: Promise<number | null>;

  /**
   * @param entry the program to run @defaultValue the sources' `src/cli/main.ts` (a test of the
   *   built copy passes its `bin/concordance-worker.js`)
   */
  constructor(args: string[], env: Record<string, string>, entry: string = MAIN) {
    this.child = spawn(process.execPath, [entry, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = once(this.child, 'exit').then(([code]) => code as number | null);
    if (this.child.stderr)
      createInterface({ input: this.child.stderr }).on('line', (line) => this.#add(line));
    if (this.child.stdout) {
      createInterface({ input: this.child.stdout }).on('line', (line) => {
        this.stdout.push(line);
        this.#add(line);
      });
    }
  }

  #add(line: string): void {
    this.lines.push(line);
    for (const waiter of this.#waiters.splice(0)) {
      if (waiter.match(line)) waiter.resolve(line);
      else this.#waiters.push(waiter);
    }
  }

  /** Resolves with the first line (seen or to come) containing `text`; rejects if the process exits first. */
  waitForLine(text: string): Promise<string> {
    const seen = this.lines.find((line) => line.includes(text));
    if (seen !== undefined) return Promise.resolve(seen);
    return Promise.race([
      new Promise<string>((resolve) =>
        this.#waiters.push({ match: (l) => l.includes(text), resolve }),
      ),
      this.exited.then((code) => {
        throw new Error(`process exited (${code}) before "${text}":\n${this.lines.join('\n')}`);
      }),
    ]);
  }

  /** Kills with `signal` and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}
