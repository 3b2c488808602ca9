import { basename, dirname, resolve } from 'node:path';
import { LuaScriptError } from './lua-script-error.ts';

/** How many keys (or arguments) a script takes: exactly `count`, or `count` and more. */
export interface LuaArity {
  count: number;
  variadic: boolean;
}

/** A script file read with its includes: its name, the source to send, and its arity. */
export interface LuaFile {
  name: string;
  source: string;
  keys: LuaArity;
  args: LuaArity;
}

/** The header: a block comment first in the file. */
const HEADER = /^--\[\[([\s\S]*?)\]\]\s*\n/;
/**
 * A header line `KEYS[n] the due set` / `ARGV[n...] each …` (the last may go on). A key the script
 * only routes by (its slot) and never touches reads `KEYS[n] (routing only) …`.
 */
const DECLARED = /^\s*(KEYS|ARGV)\[(\d+)(\.\.\.)?\]\s+(\S.*)$/gm;
const ROUTING_ONLY = '(routing only)';
/** Lua comments (`--[[ … ]]`, `-- …`): what they say is not what the script uses. */
const COMMENTS = /--\[\[[\s\S]*?\]\]|--[^\n]*/g;
/** `--- @include "../../queries/lua/includes/schedule-query"`, on a line of its own. */
const INCLUDE = /^--- @include "([^"]+)"[ \t]*(?:\r?\n|$)/gm;
/** A reference to one key or argument by its number. */
const USED = /\b(KEYS|ARGV)\[(\d+)\]/g;
/** A reference that needs a variadic header (`#KEYS`, `KEYS[i]`). */
const INDEXED = /(#(KEYS|ARGV)\b)|\b(KEYS|ARGV)\[[^\d\]]/;

function arity(file: string, kind: 'KEYS' | 'ARGV', header: string, body: string): LuaArity {
  const declared = [...header.matchAll(DECLARED)].filter((m) => m[1] === kind);
  const numbers = declared.map((m) => Number(m[2]));
  numbers.forEach((n, i) => {
    if (n !== i + 1) {
      throw new LuaScriptError(
        `${file}: its header lists ${kind}[${n}] where ${kind}[${i + 1}] belongs`,
      );
    }
  });
  const variadic = declared.some((m, i) => m[3] !== undefined && i === declared.length - 1);
  if (declared.some((m, i) => m[3] !== undefined && i !== declared.length - 1)) {
    throw new LuaScriptError(`${file}: only the last ${kind} of the header may go on ("[n...]")`);
  }
  const code = body.replace(COMMENTS, '');
  const used = new Set(
    [...code.matchAll(USED)].filter((m) => m[1] === kind).map((m) => Number(m[2])),
  );
  const routingOnly = new Set(
    declared.filter((m) => m[4]?.startsWith(ROUTING_ONLY)).map((m) => Number(m[2])),
  );
  for (const n of used) {
    if (n > numbers.length) {
      throw new LuaScriptError(`${file}: uses ${kind}[${n}], which its header does not name`);
    }
  }
  const count = variadic ? numbers.length - 1 : numbers.length;
  for (let n = 1; n <= count; n++) {
    if (!used.has(n) && !routingOnly.has(n)) {
      throw new LuaScriptError(`${file}: its header names ${kind}[${n}], which it never uses`);
    }
    if (used.has(n) && routingOnly.has(n)) {
      throw new LuaScriptError(
        `${file}: uses ${kind}[${n}], which its header says it only routes by`,
      );
    }
  }
  const indexed = [...code.matchAll(new RegExp(INDEXED, 'g'))].some((m) => (m[2] ?? m[3]) === kind);
  if (indexed && !variadic) {
    throw new LuaScriptError(
      `${file}: indexes ${kind} by a variable, so its header must say where they go on ("${kind}[n...]")`,
    );
  }
  return { count, variadic };
}

/**
 * The text of an included file: a header, then whole `local function`s and nothing else at the
 * top level that touches KEYS or ARGV (a shared piece is a function that gets what it needs).
 */
function includedBody(path: string, text: string): string {
  const header = HEADER.exec(text);
  if (header === null) throw new LuaScriptError(`${path}: an included file starts with its header`);
  const body = text.slice(header[0].length);
  if (!/^\s*local function /.test(body.replace(INCLUDE, ''))) {
    throw new LuaScriptError(
      `${path}: an included file holds whole functions ("local function …")`,
    );
  }
  if (/\b(KEYS|ARGV)\b/.test(body)) {
    throw new LuaScriptError(
      `${path}: an included function gets its keys and arguments as parameters`,
    );
  }
  return body;
}

/**
 * Reads the script at `path` (through `read`) with its header and includes, in the shape of
 * BullMQ's `src/commands`:
 *
 * - the file starts with a block comment that says what the script does and names each key and
 *   argument on a line of its own (`KEYS[n] the due set`, `ARGV[n] now, epoch ms`; the last of
 *   each may go on: `ARGV[n...] one member per argument`);
 * - `--- @include "<path>"` lines (relative, without `.lua`) pull in files of whole functions,
 *   each once, in order, includes of includes first;
 * - the header must match the body: every key and argument it names is used, and none else.
 */
export function readLuaFile(path: string, read: (path: string) => string): LuaFile {
  const text = read(path);
  const header = HEADER.exec(text);
  if (header === null) {
    throw new LuaScriptError(`${path}: a script starts with its header ("--[[ … KEYS[n] … ]]")`);
  }
  const body = text.slice(header[0].length);
  const included: string[] = [];
  const seen = new Set<string>();
  const include = (from: string, source: string): string =>
    source.replace(INCLUDE, (_line, relative: string) => {
      const target = resolve(dirname(from), `${relative}.lua`);
      if (seen.has(target)) return '';
      seen.add(target);
      const own = includedBody(target, read(target));
      included.push(include(target, own));
      return '';
    });
  const main = include(path, body);
  const name = basename(path, '.lua');
  return {
    name,
    source: `${header[0]}${included.join('\n')}${main}`,
    keys: arity(path, 'KEYS', header[1] ?? '', main),
    args: arity(path, 'ARGV', header[1] ?? '', main),
  };
}
