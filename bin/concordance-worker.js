#!/usr/bin/env node
// The installed command. Node >= 22.18 runs the TypeScript sources directly (type stripping);
// a built copy in dist/ is preferred when present (the Docker image ships one). An older Node.js
// runs it again under the Node.js that bin/project-node.cjs fetches once into a cache, or says in
// one line why it cannot, without a stack trace.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const { nodeVersionProblem, engineRange, suitableNodeDir } = createRequire(import.meta.url)(
  './project-node.cjs',
);

if (nodeVersionProblem(process.versions.node, engineRange()) === undefined) {
  const built = new URL('../dist/src/cli/main.js', import.meta.url);
  await import(
    existsSync(built) ? built.href : new URL('../src/cli/main.ts', import.meta.url).href
  );
} else {
  let dir;
  try {
    dir = suitableNodeDir(process.env, (line) => process.stderr.write(`${line}\n`));
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  const self = fileURLToPath(import.meta.url);
  const child = spawn(join(dir, 'node'), [self, ...process.argv.slice(2)], { stdio: 'inherit' });
  // The signals a supervisor or a terminal sends reach the command that does the work.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'])
    process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal !== null) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
