import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import { LuaScriptError } from './lua-script-error.ts';
import { readLuaFile, type LuaArity } from './lua-source.ts';

/** Connections a script runs on: a single Redis or a Redis Cluster (routed by the first key). */
export type ScriptConnection = Redis | Cluster;

type Scripted = Record<string, unknown>;

/** The `.lua` files loaded so far, by absolute path (a test checks every file is loaded once). */
export const loadedLuaFiles = new Set<string>();

/**
 * A Redis script, sent by its SHA-1 (`EVALSHA`), and in full (`EVAL`) only when the server does
 * not know it yet (`NOSCRIPT`: a new or restarted Redis, a failover, a `SCRIPT FLUSH`). In a MULTI
 * it is an ioredis command defined on the connection, which sends the source once per socket. The
 * source lives in a `.lua` file of its own whose header names each key and argument
 * (`KEYS[n] …`, `ARGV[n] …`; see {@link readLuaFile}); every call is checked against it.
 */
export class LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
  readonly keys: LuaArity;
  readonly args: LuaArity;
  readonly #command: string;

  private constructor(name: string, source: string, keys: LuaArity, args: LuaArity) {
    this.name = name;
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
    this.keys = keys;
    this.args = args;
    this.#command = `cw_${name.replace(/[^A-Za-z0-9]/g, '_')}_${this.sha.slice(0, 12)}`;
  }

  /** Loads the script of `file` (a `.lua` file with its header) and the functions it includes. */
  static load(file: URL): LuaScript {
    const path = fileURLToPath(file);
    const { name, source, keys, args } = readLuaFile(path, (p) => readFileSync(p, 'utf8'));
    loadedLuaFiles.add(path);
    return new LuaScript(name, source, keys, args);
  }

  /** A script from a source with a header, for tests. */
  static fromSource(name: string, text: string): LuaScript {
    const { source, keys, args } = readLuaFile(`${name}.lua`, () => text);
    return new LuaScript(name, source, keys, args);
  }

  /** Defines the script on `redis` (once); a MULTI made afterwards can {@link stage} it. */
  define(redis: ScriptConnection): void {
    if (typeof (redis as unknown as Scripted)[this.#command] === 'function') return;
    redis.defineCommand(this.#command, {
      lua: this.source,
      ...(this.keys.variadic ? {} : { numberOfKeys: this.keys.count }),
    });
  }

  /** Runs the script with `keys` (all of one slot) and `args`; answers what the script returns. */
  async run(
    redis: ScriptConnection,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    // EVALSHA and EVAL are built-in commands: they join ioredis's automatic pipelines, which a
    // command defined on the client after a tick's pipeline was made would not.
    this.#check(keys, args);
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }

  /** Adds a call to `multi`, made from a connection the script was {@link define}d on first. */
  stage(
    multi: ChainableCommander,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): ChainableCommander {
    const call = (multi as unknown as Record<string, unknown>)[this.#command];
    if (typeof call !== 'function') {
      throw new LuaScriptError(
        `${this.name}.lua is not defined on the connection this MULTI came from: call define() first`,
      );
    }
    this.#check(keys, args);
    const argv = this.keys.variadic ? [keys.length, ...keys, ...args] : [...keys, ...args];
    return (call as (...a: unknown[]) => ChainableCommander).apply(multi, argv);
  }

  #check(keys: readonly string[], args: readonly (string | number)[]): void {
    check(this.name, 'KEYS', this.keys, keys.length);
    check(this.name, 'ARGV', this.args, args.length);
  }
}

function check(name: string, what: string, arity: LuaArity, given: number): void {
  const fits = arity.variadic ? given >= arity.count : given === arity.count;
  if (!fits) {
    const wanted = arity.variadic ? `at least ${arity.count}` : String(arity.count);
    throw new LuaScriptError(`${name}.lua takes ${wanted} ${what}, its call gave ${given}`);
  }
}
