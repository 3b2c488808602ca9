import { userInfo } from 'node:os';

/** The actor of an HTTP action: the token's 1-based position in `ADMIN_TOKENS`, never the token. */
export function tokenActor(index: number): string {
  return `admin-token#${index + 1}`;
}

/** The actor of a CLI action: `cli:` + the OS user who ran it (`cli:unknown` without one). */
export function cliActor(): string {
  let user: string | undefined;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? process.env.LOGNAME;
  }
  return `cli:${user === undefined || user === '' ? 'unknown' : user}`;
}
