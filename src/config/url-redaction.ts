/**
 * `text` (a URL, or what was meant to be one) with the password of its user info replaced by
 * `***`: `redis://user:secret@host:6379` → `redis://user:***@host:6379`. The user name stays (it is
 * no secret and tells which ACL user was used). Works on text that is not a valid URL too
 * (`http//user:secret@proxy`), so that a refused value can be quoted: everything between the
 * first `:` of the user info and the last `@` is taken for the password, whatever it holds.
 */
export function redactUrlPassword(text: string): string {
  const at = text.lastIndexOf('@');
  if (at === -1) return text;
  const scheme = text.indexOf('//');
  const start = scheme !== -1 && scheme < at ? scheme + 2 : 0;
  const userinfo = text.slice(start, at);
  const colon = userinfo.indexOf(':');
  if (colon === -1) return text;
  return `${text.slice(0, start)}${userinfo.slice(0, colon)}:***${text.slice(at)}`;
}
