import { execFileSync, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const { nodeVersionProblem, engineRange } = createRequire(import.meta.url)(
  '../../../bin/check-node.cjs',
) as {
  nodeVersionProblem(version: string, range: string): string | undefined;
  engineRange(): string;
};

/**
 * This machine's system Node.js, older than the project needs (the guide: "System node is 20"),
 * as a newcomer's machine has it.
 */
const OLD_NODE = '/usr/bin/node';

function oldNodeMajor(): number {
  return Number(execFileSync(OLD_NODE, ['-p', 'process.versions.node.split(".")[0]']).toString());
}

/** Runs `command` with the old Node.js first on PATH, as a newcomer would. */
function withOldNode(command: string, args: string[]) {
  const result = spawnSync(command, args, {
    cwd: root,
    env: { ...process.env, PATH: `${dirname(OLD_NODE)}:${process.env.PATH ?? ''}` },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const STACK_TRACE = /^\s+at |node:internal|ERR_UNKNOWN_FILE_EXTENSION|SyntaxError/m;

describe('a Node.js older than engines.node', () => {
  it('is named in one line with what to run', () => {
    const problem = nodeVersionProblem('20.20.2', '>=22.22');
    expect(problem).toBe(
      'concordance-worker needs Node.js >=22.22 and this is Node.js v20.20.2: run `source scripts/use-node.sh` (it installs Node 24 when yours is older), then the same command again.',
    );
    expect(nodeVersionProblem('v22.21.9', '>=22.22')).toContain('v22.21.9');
    expect(nodeVersionProblem('22.22.0', '>=22.22')).toBeUndefined();
    expect(nodeVersionProblem('22.22.1', '>=22.22')).toBeUndefined();
    expect(nodeVersionProblem('24.0.0', '>=22.22')).toBeUndefined();
    expect(() => nodeVersionProblem('24.0.0', '^22')).toThrow(/>=X\.Y/);
  });

  it.each([
    ['npm run demo', 'npm', ['run', 'demo']],
    ['npm test', 'npm', ['test']],
    ['the CLI', OLD_NODE, ['bin/concordance-worker.js', '--version']],
  ])('%s: one line saying to run scripts/use-node.sh, no stack trace', (_name, command, args) => {
    expect(oldNodeMajor(), `${OLD_NODE} must be older than ${engineRange()}`).toBeLessThan(22);
    const { status, output } = withOldNode(command, args);
    expect(status).not.toBe(0);
    const ours = output.split('\n').filter((line) => line.includes('scripts/use-node.sh'));
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatch(
      /^concordance-worker needs Node\.js >=\d+\.\d+ and this is Node\.js v\d+/,
    );
    expect(output).not.toMatch(STACK_TRACE);
  });
});
