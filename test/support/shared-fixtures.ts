import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The project's shared material (`shared/`, beside the repository), where the public HL7 v2 and
 * FHIR fixtures live; `CW_SHARED_DIR` overrides it.
 */
function sharedDir(): string {
  const candidates = [
    process.env.CW_SHARED_DIR,
    fileURLToPath(new URL('../../../shared/', import.meta.url)),
    '/work/shared/',
  ];
  const found = candidates.find((dir) => dir !== undefined && existsSync(`${dir}/fixtures`));
  if (found === undefined) throw new Error('shared/fixtures not found beside the repository');
  return found.endsWith('/') ? found : `${found}/`;
}

export const SHARED_FIXTURES = `${sharedDir()}fixtures/`;
