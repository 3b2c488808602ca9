/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a text exposition (comments left out). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const [, name = '', rawLabels = '', value = ''] = match;
    const labels: Record<string, string> = {};
    for (const [, key = '', raw = ''] of rawLabels.matchAll(LABEL)) {
      labels[key] = raw.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name, labels, value: Number(value) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels`. */
export function total(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** Whether a sample named `name` with these labels is there at all. */
export function has(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): boolean {
  return samples.some(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** The metric families (`# TYPE` lines) and their help text (`# HELP` lines). */
export function families(text: string): Map<string, { type?: string; help?: string }> {
  const found = new Map<string, { type?: string; help?: string }>();
  for (const line of text.split('\n')) {
    const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (!match) continue;
    const [, kind, name = '', rest = ''] = match;
    const entry = found.get(name) ?? {};
    if (kind === 'HELP') entry.help = rest;
    else entry.type = rest;
    found.set(name, entry);
  }
  return found;
}
