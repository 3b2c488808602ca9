import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { defaultUserAgent } from './default-user-agent.ts';

it('names the package and its version', () => {
  const { version } = JSON.parse(
    readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  expect(defaultUserAgent()).toBe(`concordance-worker/${version}`);
});
