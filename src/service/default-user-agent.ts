import { readFileSync } from 'node:fs';

const NAME = 'concordance-worker';

/**
 * `concordance-worker/<version>`, the version read from our package.json. The file is looked up
 * at run time, walking up from this module, because the built copy in `dist/src/service` sits
 * one level deeper than the source and a JSON import would be copied into `dist` by tsc.
 */
export function defaultUserAgent(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg: unknown = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8'));
      if (isOurPackage(pkg)) return `${NAME}/${pkg.version}`;
    } catch {
      // Not there (or unreadable): try the next level.
    }
  }
  return NAME;
}

function isOurPackage(pkg: unknown): pkg is { version: string } {
  return (
    typeof pkg === 'object' &&
    pkg !== null &&
    'name' in pkg &&
    pkg.name === NAME &&
    'version' in pkg &&
    typeof pkg.version === 'string'
  );
}
