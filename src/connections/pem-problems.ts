import { readFileSync } from 'node:fs';
import { X509Certificate, createPrivateKey } from 'node:crypto';

/** What a PEM file must hold. */
export type PemKind = 'certificates' | 'private key';

/**
 * Why `file` cannot serve as `kind` (unreadable, or not PEM of that kind), or undefined when it
 * can. The message names the file, never its content.
 */
export function pemProblem(file: string, kind: PemKind): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
  try {
    if (kind === 'private key') createPrivateKey(text);
    else if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no certificate');
    else new X509Certificate(text);
  } catch {
    return `${file} does not hold PEM ${kind === 'private key' ? 'a private key' : 'certificates'}`;
  }
  return undefined;
}
