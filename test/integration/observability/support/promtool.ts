import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';

/** Where `promtool` is; throws (never skips) when it is not installed. */
export function promtoolPath(): string {
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  if (found.status !== 0 || path === '') {
    throw new Error(
      'promtool is not installed: `apt-get install -y --no-install-recommends prometheus` ' +
        '(.ci/run installs it when it is missing)',
    );
  }
  return path;
}

/** `promtool check metrics` on an exposition: its exit code and everything it printed. */
export async function checkMetrics(
  exposition: string,
): Promise<{ code: number | null; output: string }> {
  const child = spawn(promtoolPath(), ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stdin.end(exposition);
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}
