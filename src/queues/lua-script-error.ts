import { ConcordanceError } from '../errors/concordance-error.ts';

/**
 * A Redis script file that breaks the project's rules (its header, its includes), or a call that
 * does not match its header: a defect in the code, found at load or at the call.
 */
export class LuaScriptError extends ConcordanceError {
  static readonly code = 'ERR_LUA_SCRIPT';
  readonly code = LuaScriptError.code;
}
