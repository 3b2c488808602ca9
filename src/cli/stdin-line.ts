import { createInterface } from 'node:readline/promises';

/**
 * `raw` itself, or for `-` the first line of standard input (trimmed): a patient identifier given
 * so stays out of `ps` and the shell's history.
 */
export async function valueOrStdinLine(raw: string, option: string): Promise<string> {
  if (raw !== '-') return raw;
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    lines.close();
    return line.trim();
  }
  throw new Error(`${option} -: standard input held no line`);
}
