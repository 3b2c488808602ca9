import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { enginesFloor } from './engines-floor.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
  engines: { node: string };
};

describe('engines.node', () => {
  it('states the highest minimum that the installed dependencies declare', () => {
    const { floor, declaredBy } = enginesFloor(root);
    expect(declaredBy.length).toBeGreaterThan(0);
    const stated = semver.minVersion(pkg.engines.node)?.version;
    expect(
      stated,
      `engines.node is ${pkg.engines.node}; ${declaredBy.join(', ')} need ${floor}: write ">=${floor.replace(/\.0$/, '')}"`,
    ).toBe(floor);
  });

  it('is at least what running the TypeScript sources needs (type stripping, Node 22.18)', () => {
    expect(semver.gte(semver.minVersion(pkg.engines.node) ?? '0.0.0', '22.18.0')).toBe(true);
  });
});
