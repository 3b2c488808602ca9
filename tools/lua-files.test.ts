import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readLuaFile } from '../src/queues/lua-source.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

function filesUnder(folder: string, keep: (name: string) => boolean): string[] {
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && keep(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

const sources = ['src', 'workers'].flatMap((folder) =>
  filesUnder(folder, (name) => name.endsWith('.ts') && !name.endsWith('.test.ts')),
);
/**
 * The loader: it alone makes scripts, and its `EVAL` is the fallback when Redis does not know a
 * script yet (`NOSCRIPT`).
 */
const loader = join(root, 'src/queues/lua-script.ts');
const luaFiles = ['src', 'workers'].flatMap((folder) =>
  filesUnder(folder, (name) => name.endsWith('.lua')),
);
/** Files of shared functions live in an `includes` folder; the rest are scripts. */
const isInclude = (file: string) => file.split(sep).includes('includes');
const scripts = luaFiles.filter((file) => !isInclude(file));
const includes = luaFiles.filter(isInclude);
const name = (file: string) => relative(root, file);

/** `LuaScript.load(new URL('./lua/x.lua', import.meta.url))` calls, resolved, per source file. */
const loads = sources.flatMap((file) =>
  [...readFileSync(file, 'utf8').matchAll(/LuaScript\.load\(\s*new URL\(\s*'([^']+)'/g)].map(
    (m) => ({ from: file, script: resolve(dirname(file), m[1] ?? '') }),
  ),
);

describe('Redis scripts as files', () => {
  it('no TypeScript outside tests holds Lua or calls a script by its source', () => {
    const offending = sources
      .map((file) => ({ file, text: readFileSync(file, 'utf8') }))
      .filter(
        ({ file, text }) =>
          /redis\.call\(|\bKEYS\[\d+\]|\bARGV\[\d+\]/.test(text) ||
          (file !== loader && /\.eval\(|new LuaScript\(/.test(text)),
      )
      .map(({ file }) => name(file));
    expect(offending).toEqual([]);
  });

  it.each(scripts.map((file) => [name(file), file]))(
    '%s: its header names its keys and arguments as its body uses them, and one module loads it',
    (_name, file) => {
      expect(() => readLuaFile(file, (path) => readFileSync(path, 'utf8'))).not.toThrow();
      expect(loads.filter((l) => l.script === file).map((l) => name(l.from))).toHaveLength(1);
    },
  );

  it('every load names a script file, and every file of shared functions is included', () => {
    expect(loads.map((l) => name(l.script)).filter((f) => !scripts.map(name).includes(f))).toEqual(
      [],
    );
    const pulled = new Set(
      scripts.flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/^--- @include "([^"]+)"/gm)].map((m) =>
          resolve(dirname(file), `${m[1]}.lua`),
        ),
      ),
    );
    for (const file of includes) {
      for (const m of readFileSync(file, 'utf8').matchAll(/^--- @include "([^"]+)"/gm)) {
        pulled.add(resolve(dirname(file), `${m[1]}.lua`));
      }
    }
    expect(includes.filter((file) => !pulled.has(file)).map(name)).toEqual([]);
  });
});
