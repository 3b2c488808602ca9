#!/usr/bin/env node
// The installed command. Node >= 22.18 runs the TypeScript sources directly (type stripping);
// a built copy in dist/ is preferred when present (the Docker image ships one). An older Node.js
// gets one line saying what to run (bin/check-node.cjs), not a stack trace.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const { nodeVersionProblem, engineRange } = createRequire(import.meta.url)('./check-node.cjs');
const problem = nodeVersionProblem(process.versions.node, engineRange());
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
const built = new URL('../dist/src/cli/main.js', import.meta.url);
await import(existsSync(built) ? built.href : new URL('../src/cli/main.ts', import.meta.url).href);
