import { packageInfo } from '../package-root.ts';

/** The version in package.json, for `--version`. */
export function packageVersion(): string {
  return packageInfo().version;
}
