import { readFileSync } from 'node:fs';
import { ConcordanceError } from './errors/concordance-error.ts';

/** Our package's name in package.json: the marker of the package root. */
export const PACKAGE_NAME = 'concordance-worker';

/** How many folders up from this module the root may be (`src/` is 1, `dist/src/` is 2). */
const MAX_LEVELS = 4;

/**
 * The package root cannot be found above this module: the installation is incomplete (no
 * package.json of ours above the code, e.g. only `dist/` was copied).
 */
export class PackageRootError extends ConcordanceError {
  static readonly code = 'ERR_PACKAGE_ROOT';
  readonly code = PackageRootError.code;
  override readonly name = 'PackageRootError';
}

export interface PackageInfo {
  /** The package root folder, as a `file:` URL ending in `/`. */
  readonly root: URL;
  readonly version: string;
}

let cached: PackageInfo | undefined;

function ourPackage(text: string): { version: string } | undefined {
  const pkg: unknown = JSON.parse(text);
  if (typeof pkg !== 'object' || pkg === null) return undefined;
  const { name, version } = pkg as Record<string, unknown>;
  return name === PACKAGE_NAME && typeof version === 'string' ? { version } : undefined;
}

/**
 * The package root and version, found by walking up from this module to the first package.json
 * named `concordance-worker`. The same code runs from the sources (`src/`, one level down) and
 * from the built copy (`dist/src/`, two levels down); everything read by path at run time
 * (package.json, `config/`, `data/`) sits at the root in both cases, so it is found through here.
 *
 * @throws PackageRootError when no such package.json is found.
 */
export function packageInfo(): PackageInfo {
  if (cached !== undefined) return cached;
  let dir = new URL('./', import.meta.url);
  let lastError: unknown;
  for (let level = 0; level <= MAX_LEVELS; level += 1) {
    const file = new URL('package.json', dir);
    try {
      const pkg = ourPackage(readFileSync(file, 'utf8'));
      if (pkg !== undefined) {
        cached = { root: dir, version: pkg.version };
        return cached;
      }
    } catch (err) {
      // Absent, unreadable or not JSON: keep walking up.
      lastError = err;
    }
    dir = new URL('../', dir);
  }
  throw new PackageRootError(
    `no package.json of ${PACKAGE_NAME} within ${MAX_LEVELS} folders above ${new URL('./', import.meta.url).pathname}: the installation is incomplete`,
    { cause: lastError },
  );
}

/** A file or folder of the package, by its path from the root (e.g. `config/default.yaml`). */
export function packageFile(relative: string): URL {
  return new URL(relative, packageInfo().root);
}
