import { createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import { decodeKeyText } from '../config/secret-strength.ts';
import { CrosswalkKeyError } from './crosswalk-keys.ts';

/** The HKDF `info` of a backup's sealing key: a key of its own, never one the crosswalk uses. */
export const BACKUP_KEY_INFO = 'concordance-worker backup v1';

/** The HKDF `info` of the key id printed in a backup's header (not a key: a name for one). */
const KEY_ID_INFO = 'concordance-worker backup key id v1';

/** The key a backup is sealed with, and its id (what the backup's header names). */
export interface BackupKey {
  /** 16 hex digits derived one-way from the secret: says which key, reveals nothing of it. */
  id: string;
  /** AES-256-GCM key. */
  key: KeyObject;
}

/**
 * The backup key of a `CROSSWALK_KEY` secret: HKDF-SHA256 (empty salt) of the secret's bytes with
 * its own `info`, and a key id from another `info`. The one place a backup key is derived: a
 * keyring (several secrets) maps each of its secrets through this.
 */
export function backupKeyFrom(secret: string): BackupKey {
  const master = decodeKeyText(secret);
  if (master === undefined) throw new CrosswalkKeyError('CROSSWALK_KEY must be base64 or hex');
  if (master.length < 32) throw new CrosswalkKeyError('CROSSWALK_KEY must hold at least 32 bytes');
  const derive = (info: string, bytes: number) =>
    Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, bytes));
  const key = createSecretKey(derive(BACKUP_KEY_INFO, 32));
  const id = derive(KEY_ID_INFO, 8).toString('hex');
  master.fill(0);
  return { id, key };
}
