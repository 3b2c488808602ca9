/**
 * The highest minimum Node.js version that the installed packages' own `engines.node` fields
 * declare: what package.json's `engines.node` states (tools/engines-floor.test.ts checks it).
 *
 *   node tools/engines-floor.ts     prints {"floor": "22.22.0", "declared_by": [...]}
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

export interface EnginesFloor {
  floor: string;
  /** The packages whose range has that minimum. */
  declaredBy: string[];
}

interface Declared {
  name: string;
  minimum: semver.SemVer;
}

function declaredIn(dir: string, out: Declared[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      declaredIn(path, out);
      continue;
    }
    const manifest = join(path, 'package.json');
    if (existsSync(manifest)) {
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as {
        name?: string;
        engines?: { node?: unknown };
      };
      const range = pkg.engines?.node;
      const minimum =
        typeof range === 'string' && semver.validRange(range) !== null
          ? semver.minVersion(range)
          : null;
      if (minimum !== null) out.push({ name: pkg.name ?? entry.name, minimum });
    }
    const nested = join(path, 'node_modules');
    if (existsSync(nested)) declaredIn(nested, out);
  }
}

/** Reads every package under `root`/node_modules (nested ones included). */
export function enginesFloor(root: string): EnginesFloor {
  const declared: Declared[] = [];
  declaredIn(join(root, 'node_modules'), declared);
  const floor = declared.reduce<semver.SemVer | undefined>(
    (max, d) => (max === undefined || semver.gt(d.minimum, max) ? d.minimum : max),
    undefined,
  );
  if (floor === undefined) throw new Error(`no engines.node under ${root}/node_modules`);
  return {
    floor: floor.version,
    declaredBy: declared.filter((d) => semver.eq(d.minimum, floor)).map((d) => d.name),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { floor, declaredBy } = enginesFloor(fileURLToPath(new URL('..', import.meta.url)));
  process.stdout.write(`${JSON.stringify({ floor, declared_by: declaredBy })}\n`);
}
