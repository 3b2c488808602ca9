/** A one-line progress bar on a terminal; on anything else, a line at each tenth. */
export class ProgressBar {
  readonly #total: number;
  readonly #label: string;
  readonly #tty = process.stderr.isTTY;
  #lastTenth = -1;

  constructor(label: string, total: number) {
    this.#label = label;
    this.#total = Math.max(1, total);
  }

  update(done: number, note = ''): void {
    const share = Math.min(1, done / this.#total);
    if (this.#tty) {
      const width = 30;
      const filled = Math.round(share * width);
      const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`;
      process.stderr.write(`\r${this.#label} [${bar}] ${done}/${this.#total} ${note}`.padEnd(90));
      return;
    }
    const tenth = Math.floor(share * 10);
    if (tenth !== this.#lastTenth) {
      this.#lastTenth = tenth;
      process.stderr.write(`${this.#label}: ${done}/${this.#total} ${note}\n`);
    }
  }

  finish(): void {
    if (this.#tty) process.stderr.write('\n');
  }
}
