import { PACKAGE_NAME, packageInfo } from '../package-root.ts';

/** `concordance-worker/<version>`, the version read from our package.json. */
export function defaultUserAgent(): string {
  try {
    return `${PACKAGE_NAME}/${packageInfo().version}`;
  } catch {
    // An incomplete installation: the name alone still identifies the client.
    return PACKAGE_NAME;
  }
}
