import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type * as packageRoot from './package-root.ts';
import { packageFile, packageInfo } from './package-root.ts';

type PackageRootModule = typeof packageRoot;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh copy of this module at `<tmp>/dist/src/package-root.ts` (where the built copy puts
 * it, with the error family's base beside it), with `files` (path from `<tmp>` -> JSON content) written first.
 */
async function builtCopy(
  files: Record<string, unknown>,
): Promise<{ root: string; mod: PackageRootModule }> {
  const root = mkdtempSync(join(tmpdir(), 'cw-package-root-'));
  dirs.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), JSON.stringify(content));
  }
  const file = join(root, 'dist', 'src', 'package-root.ts');
  mkdirSync(dirname(file), { recursive: true });
  copyFileSync(new URL('./package-root.ts', import.meta.url), file);
  // Its one import, the error family's base, where the built copy puts it too.
  const base = join(root, 'dist', 'src', 'errors', 'concordance-error.ts');
  mkdirSync(dirname(base), { recursive: true });
  copyFileSync(new URL('./errors/concordance-error.ts', import.meta.url), base);
  return { root, mod: (await import(pathToFileURL(file).href)) as PackageRootModule };
}

describe('the package root', () => {
  it('is the folder of our package.json, from the sources', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(packageInfo().root.href).toBe(new URL('../', import.meta.url).href);
    expect(packageInfo().version).toBe(pkg.version);
    expect(existsSync(packageFile('config/default.yaml'))).toBe(true);
    expect(existsSync(packageFile('data/ccsr/'))).toBe(true);
  });

  it('is found two levels up from the built copy in dist/src/, past other package.json files', async () => {
    const { root, mod } = await builtCopy({
      'package.json': { name: 'concordance-worker', version: '9.8.7' },
      'dist/package.json': { type: 'module' },
      'dist/src/package.json': { name: 'other', version: '0.0.1' },
    });
    expect(mod.packageInfo().version).toBe('9.8.7');
    expect(mod.packageInfo().root.href).toBe(`${pathToFileURL(root).href}/`);
    expect(mod.packageFile('config/default.yaml').href).toBe(
      `${pathToFileURL(root).href}/config/default.yaml`,
    );
  });

  it('missing, throws ERR_PACKAGE_ROOT naming the installation as incomplete', async () => {
    const { mod } = await builtCopy({});
    expect(() => mod.packageInfo()).toThrow(mod.PackageRootError);
    expect(() => mod.packageInfo()).toThrow(
      expect.objectContaining({
        code: 'ERR_PACKAGE_ROOT',
        message: expect.stringContaining('the installation is incomplete'),
      }),
    );
  });
});
