#!/usr/bin/env node
// The installed command. Node >= 22.18 runs the TypeScript sources directly (type stripping);
// a built copy in dist/ is preferred when present (the Docker image ships one).
import { existsSync } from 'node:fs';

const built = new URL('../dist/src/cli/main.js', import.meta.url);
await import(existsSync(built) ? built.href : new URL('../src/cli/main.ts', import.meta.url).href);
