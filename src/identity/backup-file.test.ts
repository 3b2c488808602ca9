import { describe, expect, it } from 'vitest';
import { openBackup, readBackupHeader, sealBackup } from './backup-file.ts';
import type { BackupContent, BackupHeaderInput } from './backup-file.ts';
import { BackupFormatError, BackupIntegrityError, BackupKeyError } from './backup-errors.ts';
import { backupKeyFrom } from './backup-key.ts';
import { generateCrosswalkSecret } from './crosswalk-keys.ts';

/** A local id no file may hold in the clear. */
const MARKER = 'MRN-PLANTED-BACKUP-7731';

const header: BackupHeaderInput = {
  created_at: '2024-05-01T10:00:00.000Z',
  prefix: '{cw}',
  partitions: 1,
  keys: [{ xw: 0, xwr: 1, xwm: 0, rec: 1, presets: 0, fhir: 0, optout: 0 }],
  left_out: 0,
};

/** Content whose key names and values carry the marker, as plain text and as a DUMP would. */
const content: BackupContent = {
  partitions: [
    {
      prefix: '{cw}',
      read_at: 1_714_557_600_000,
      entries: [
        [`{cw}:xwr:${MARKER}`, -1, Buffer.from(`local id ${MARKER}`).toString('base64')],
        ['{cw}:rec:psid-1', 1_714_557_700_000, Buffer.from(MARKER.repeat(3)).toString('base64')],
      ],
    },
  ],
};

describe('the backup file', () => {
  const secret = generateCrosswalkSecret();
  const key = backupKeyFrom(secret);

  it('opens with the key it was sealed with: the same header and content', () => {
    const file = sealBackup(header, content, key);
    const opened = openBackup(file, [key]);
    expect(opened.content).toEqual(content);
    expect(opened.header).toMatchObject({ ...header, key_id: key.id, version: 1 });
  });

  it('derives the same key id from the same secret, another from another, never the key', () => {
    expect(backupKeyFrom(secret).id).toBe(key.id);
    expect(backupKeyFrom(generateCrosswalkSecret()).id).not.toBe(key.id);
    expect(key.id).toMatch(/^[0-9a-f]{16}$/);
    const bytes = key.key.export();
    expect(bytes.toString('hex')).not.toContain(key.id);
  });

  it('holds neither the planted local id (plain, base64 or hex) nor the key in its bytes', () => {
    const file = sealBackup(header, content, key);
    const text = file.toString('latin1');
    for (const form of [
      MARKER,
      Buffer.from(MARKER).toString('base64').slice(0, 16),
      Buffer.from(MARKER).toString('hex'),
      Buffer.from(`local id ${MARKER}`).toString('base64'),
      secret,
      key.key.export().toString('base64'),
    ]) {
      expect(text).not.toContain(form);
    }
    // Nor the key names (they name patients' service ids): only the header is in the clear.
    expect(text).not.toContain('psid-1');
  });

  it('has a header anyone can read without the key, naming the key id it needs', () => {
    const file = sealBackup(header, content, key);
    const read = readBackupHeader(file);
    expect(read).toEqual({
      format: 'concordance-worker redis backup',
      version: 1,
      ...header,
      cipher: 'AES-256-GCM',
      kdf: 'HKDF-SHA256(CROSSWALK_KEY, "concordance-worker backup v1")',
      key_id: key.id,
    });
    expect(file.subarray(0, 11).toString('utf8')).toBe('CWBACKUP 1\n');
  });

  it('refuses another key with ERR_BACKUP_KEY, naming the key id it needs', () => {
    const file = sealBackup(header, content, key);
    const other = backupKeyFrom(generateCrosswalkSecret());
    const attempt = () => openBackup(file, [other]);
    expect(attempt).toThrow(BackupKeyError);
    expect(attempt).toThrow(key.id);
    expect(attempt).toThrow(other.id);
    try {
      attempt();
    } catch (err) {
      expect((err as BackupKeyError).code).toBe('ERR_BACKUP_KEY');
    }
  });

  it('refuses a file whose content or header was altered, or that was cut short', () => {
    const file = sealBackup(header, content, key);
    const flipped = Buffer.from(file);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] ?? 0) ^ 1;
    expect(() => openBackup(flipped, [key])).toThrow(BackupIntegrityError);
    const renamed = Buffer.from(file.toString('latin1').replace('"{cw}"', '"{cx}"'), 'latin1');
    expect(readBackupHeader(renamed).prefix).toBe('{cx}');
    expect(() => openBackup(renamed, [key])).toThrow(BackupIntegrityError);
    expect(() => openBackup(file.subarray(0, file.length - 40), [key])).toThrow(
      BackupIntegrityError,
    );
  });

  it('refuses what is not a backup, or a format version it does not read', () => {
    expect(() => readBackupHeader(Buffer.from('{"hello":1}\n'))).toThrow(BackupFormatError);
    const file = sealBackup(header, content, key);
    const future = Buffer.from(
      file.toString('latin1').replace('CWBACKUP 1', 'CWBACKUP 2'),
      'latin1',
    );
    expect(() => readBackupHeader(future)).toThrow(/format 2/);
    const badHeader = Buffer.from(
      file.toString('latin1').replace('"partitions":1', '"partitions":0'),
      'latin1',
    );
    expect(() => readBackupHeader(badHeader)).toThrow(BackupFormatError);
  });
});
