import { z } from 'zod';
import { aesGcmOpen, aesGcmSeal, IV_BYTES, TAG_BYTES } from './aes-gcm.ts';
import { BackupFormatError, BackupIntegrityError, BackupKeyError } from './backup-errors.ts';
import type { BackupKey } from './backup-key.ts';

/**
 * A sealed backup of the pipeline's Redis data (see `src/runtime/redis-backup.ts`):
 *
 * ```text
 * CWBACKUP 1\n              the magic line and the format version
 * {"format":…}\n            the header, one line of JSON, in the clear
 * iv | tag | ciphertext     the content, AES-256-GCM, the two lines above bound as associated data
 * ```
 *
 * The header names the format, the key prefix, the partitions, how many keys each holds and the
 * key id ({@link BackupKey.id}), so that anyone can tell what a file is and which key opens it
 * without that key; it never holds the key, a patient id or a key name. Everything else, the key
 * names included, is in the sealed content.
 */
export const BACKUP_MAGIC = 'CWBACKUP';
export const BACKUP_VERSION = 1;

/** The kinds of keys a backup holds (`<prefix>:<kind>:…`), in the order the header lists them. */
export const BACKUP_KINDS = ['xw', 'xwr', 'xwm', 'rec', 'presets', 'fhir', 'optout'] as const;
export type BackupKind = (typeof BACKUP_KINDS)[number];

export const BackupHeaderSchema = z.strictObject({
  format: z.literal('concordance-worker redis backup'),
  version: z.literal(BACKUP_VERSION),
  created_at: z.iso.datetime(),
  /** `redis.prefix` of the pipeline it was taken from. */
  prefix: z.string().min(1),
  /** `redis.partitions`; each partition's prefix follows from the two. */
  partitions: z.int().min(1),
  /** Keys per partition, then per kind. */
  keys: z.array(z.record(z.enum(BACKUP_KINDS), z.int().min(0))),
  /** Keys of patients created while the backup was read, left out whole (see `readPartition`). */
  left_out: z.int().min(0),
  cipher: z.literal('AES-256-GCM'),
  kdf: z.literal('HKDF-SHA256(CROSSWALK_KEY, "concordance-worker backup v1")'),
  key_id: z.string().regex(/^[0-9a-f]{16}$/),
});
export type BackupHeader = z.infer<typeof BackupHeaderSchema>;

/** One key: its name, its absolute expiry (unix ms; -1: none) and its `DUMP`, base64. */
const EntrySchema = z.tuple([z.string().min(1), z.int().min(-1), z.base64()]);
export type BackupEntry = z.infer<typeof EntrySchema>;

export const BackupContentSchema = z.strictObject({
  partitions: z.array(
    z.strictObject({
      prefix: z.string().min(1),
      /** When this partition was read (the server's clock, unix ms). */
      read_at: z.int(),
      entries: z.array(EntrySchema),
    }),
  ),
});
export type BackupContent = z.infer<typeof BackupContentSchema>;

/** The header's fields that the sealing fills in. */
export type BackupHeaderInput = Omit<
  BackupHeader,
  'format' | 'version' | 'cipher' | 'kdf' | 'key_id'
>;

/** The file's bytes: the header in the clear, the content sealed under `key`. */
export function sealBackup(
  header: BackupHeaderInput,
  content: BackupContent,
  key: BackupKey,
): Buffer {
  const full: BackupHeader = BackupHeaderSchema.parse({
    format: 'concordance-worker redis backup',
    version: BACKUP_VERSION,
    ...header,
    cipher: 'AES-256-GCM',
    kdf: 'HKDF-SHA256(CROSSWALK_KEY, "concordance-worker backup v1")',
    key_id: key.id,
  });
  const head = Buffer.from(`${BACKUP_MAGIC} ${BACKUP_VERSION}\n${JSON.stringify(full)}\n`, 'utf8');
  const body = aesGcmSeal(key.key, JSON.stringify(content), head);
  return Buffer.concat([head, body]);
}

/** The header and where the sealed part starts. */
function split(file: Buffer): { header: BackupHeader; head: Buffer; body: Buffer } {
  const first = file.indexOf(0x0a);
  const magic = first < 0 ? '' : file.subarray(0, first).toString('latin1');
  if (!magic.startsWith(`${BACKUP_MAGIC} `)) {
    throw new BackupFormatError('not a concordance-worker backup (no CWBACKUP line)');
  }
  if (magic !== `${BACKUP_MAGIC} ${BACKUP_VERSION}`) {
    throw new BackupFormatError(
      `backup format ${magic.slice(BACKUP_MAGIC.length + 1)} is not one this release reads (${BACKUP_VERSION})`,
    );
  }
  const second = file.indexOf(0x0a, first + 1);
  if (second < 0) throw new BackupFormatError('the backup has no header line');
  let parsed: unknown;
  try {
    parsed = JSON.parse(file.subarray(first + 1, second).toString('utf8'));
  } catch {
    throw new BackupFormatError('the backup header is not JSON');
  }
  const header = BackupHeaderSchema.safeParse(parsed);
  if (!header.success) {
    throw new BackupFormatError(`the backup header is not valid: ${z.prettifyError(header.error)}`);
  }
  const body = file.subarray(second + 1);
  if (body.length < IV_BYTES + TAG_BYTES) {
    throw new BackupIntegrityError('the backup is cut short (no sealed content)');
  }
  return { header: header.data, head: file.subarray(0, second + 1), body };
}

/** The header alone: readable without any key. */
export function readBackupHeader(file: Buffer): BackupHeader {
  return split(file).header;
}

/**
 * The header and the content, opened with whichever of `keys` the header names. Throws
 * {@link BackupKeyError} (naming the key id needed and those given) when none is that key,
 * {@link BackupIntegrityError} when that key does not open it (altered or cut short).
 */
export function openBackup(
  file: Buffer,
  keys: readonly BackupKey[],
): { header: BackupHeader; content: BackupContent } {
  const { header, head, body } = split(file);
  const key = keys.find((k) => k.id === header.key_id);
  if (key === undefined) {
    throw new BackupKeyError(
      `the backup was sealed with the key of id ${header.key_id}; the CROSSWALK_KEY given has id ${
        keys.map((k) => k.id).join(', ') || '(none)'
      } (set the CROSSWALK_KEY the backup was taken with)`,
    );
  }
  let plain: Buffer;
  try {
    plain = aesGcmOpen(key.key, body, head);
  } catch {
    throw new BackupIntegrityError(
      'the backup does not open with its key: the file was altered or cut short',
    );
  }
  const content = BackupContentSchema.safeParse(JSON.parse(plain.toString('utf8')));
  if (!content.success) throw new BackupFormatError('the backup content is not valid');
  return { header, content: content.data };
}
