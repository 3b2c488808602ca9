import { describe, expect, it } from 'vitest';
import {
  CrosswalkKeyIdError,
  CrosswalkKeyring,
  keyIdOf,
  keyringOf,
  LEGACY_KEY_ID,
  parseKeyringText,
} from './crosswalk-keyring.ts';
import {
  CrosswalkKeyError,
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from './crosswalk-keys.ts';

const [oldSecret, newSecret, otherSecret] = [
  generateCrosswalkSecret(),
  generateCrosswalkSecret(),
  generateCrosswalkSecret(),
];

describe('CrosswalkKeyring', () => {
  it('seals under the newest (first) key, with its id, and opens values of any key it holds', () => {
    const before = CrosswalkKeyring.parse(`0:${oldSecret}`);
    const during = CrosswalkKeyring.parse(`k2:${newSecret},0:${oldSecret}`);
    const sealedBefore = before.seal('MRN-1', 'xw:a');
    const sealedNow = during.seal('MRN-1', 'xw:a');
    expect(during.sealingId).toBe('k2');
    expect(keyIdOf(sealedNow)).toBe('k2');
    expect(sealedNow.startsWith('$k2$')).toBe(true);
    expect(sealedNow).not.toContain('MRN-1');
    expect(during.open(sealedBefore, 'xw:a').toString()).toBe('MRN-1');
    expect(during.open(sealedNow, 'xw:a').toString()).toBe('MRN-1');
    // The associated data is still bound.
    expect(() => during.open(sealedNow, 'xw:b')).toThrow();
    // A key added as readable, not yet sealing (phase 1), reads what the next phase seals.
    const phase1 = CrosswalkKeyring.parse(`0:${oldSecret},k2:${newSecret}`);
    expect(keyIdOf(phase1.seal('x', 'c'))).toBe(LEGACY_KEY_ID);
    expect(phase1.open(sealedNow, 'xw:a').toString()).toBe('MRN-1');
  });

  it('refuses a value under a key id it does not hold, with ERR_CROSSWALK_KEY_ID and the id, never the value', () => {
    const during = CrosswalkKeyring.parse(`k2:${newSecret},0:${oldSecret}`);
    const sealed = during.seal('MRN-SECRET-9', 'ctx');
    const after = CrosswalkKeyring.parse(`k3:${otherSecret}`);
    let caught: unknown;
    try {
      after.open(sealed, 'ctx');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CrosswalkKeyIdError);
    expect((caught as CrosswalkKeyIdError).code).toBe('ERR_CROSSWALK_KEY_ID');
    expect((caught as CrosswalkKeyIdError).keyId).toBe('k2');
    expect((caught as Error).message).toContain('"k2"');
    expect((caught as Error).message).not.toContain('MRN-SECRET-9');
    expect((caught as Error).message).not.toContain(newSecret);
    // A legacy value (no id) with no key 0 in the ring: the same error, naming id 0.
    expect(() => after.open(deriveCrosswalkKeys(oldSecret).seal('x', 'ctx'), 'ctx')).toThrow(
      CrosswalkKeyIdError,
    );
  });

  it('reads legacy values (no key id) with key 0, which seals exactly as CROSSWALK_KEY always did', () => {
    const plain = deriveCrosswalkKeys(oldSecret);
    const legacy = CrosswalkKeyring.legacy(oldSecret);
    const asRing = CrosswalkKeyring.parse(`k2:${newSecret},0:${oldSecret}`);
    const old = plain.seal('MRN-7', 'rec:p');
    expect(keyIdOf(old)).toBe(LEGACY_KEY_ID);
    expect(asRing.open(old, 'rec:p').toString()).toBe('MRN-7');
    // A keyring of CROSSWALK_KEY alone writes what earlier versions read, and looks up the same.
    expect(plain.open(legacy.seal('MRN-7', 'rec:p'), 'rec:p').toString()).toBe('MRN-7');
    expect(legacy.lookup('MRN-7')).toBe(plain.lookup('MRN-7'));
    expect(legacy.lookups('MRN-7')).toEqual([plain.lookup('MRN-7')]);
  });

  it('looks up under each key, the sealing key first', () => {
    const ring = CrosswalkKeyring.parse(`k2:${newSecret},0:${oldSecret}`);
    const [newest, older] = [deriveCrosswalkKeys(newSecret), deriveCrosswalkKeys(oldSecret)];
    expect(ring.lookup('MRN-3')).toBe(newest.lookup('MRN-3'));
    expect(ring.lookups('MRN-3')).toEqual([newest.lookup('MRN-3'), older.lookup('MRN-3')]);
  });

  it('splits into the sealing key and the older ones for a re-seal', () => {
    const ring = CrosswalkKeyring.parse(`k2:${newSecret},0:${oldSecret},k1:${otherSecret}`);
    const rotation = ring.rotation();
    expect(rotation?.to.ids).toEqual(['k2']);
    expect(rotation?.from.ids).toEqual(['0', 'k1']);
    // `from` opens what the older keys sealed, and not what the sealing key did.
    const fromK1 = CrosswalkKeyring.parse(`k1:${otherSecret}`).seal('a', 'c');
    expect(rotation?.from.open(fromK1, 'c').toString()).toBe('a');
    expect(() => rotation?.from.open(ring.seal('a', 'c'), 'c')).toThrow(CrosswalkKeyIdError);
    expect(() => rotation?.to.open(fromK1, 'c')).toThrow(CrosswalkKeyIdError);
    expect(CrosswalkKeyring.parse(`k2:${newSecret}`).rotation()).toBeUndefined();
  });
});

describe('CROSSWALK_KEYS', () => {
  it('is <id>:<secret>[,<id>:<secret>...], spaces allowed', () => {
    expect(parseKeyringText(` k2:${newSecret} , 0:${oldSecret}`)).toEqual([
      { id: 'k2', secret: newSecret },
      { id: '0', secret: oldSecret },
    ]);
  });

  it.each([
    ['', /CROSSWALK_KEYS: it lists no key/],
    [newSecret, /CROSSWALK_KEYS \(entry 1\): an entry must be <id>:<secret>/],
    [`k2:${newSecret},bad id!:${oldSecret}`, /CROSSWALK_KEYS \(entry 2\): a key id is 1 to 16/],
    [`k2:${newSecret},k2:${oldSecret}`, /key id "k2" is listed twice/],
    [`k2:c2hvcnQ=`, /CROSSWALK_KEYS \(key id "k2"\) must hold at least 32 bytes/],
    [`k2:not base64 at all!`, /CROSSWALK_KEYS \(key id "k2"\) must be base64 or hex/],
  ])('refuses %j with a CrosswalkKeyError naming the variable', (text, message) => {
    let caught: unknown;
    try {
      CrosswalkKeyring.parse(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CrosswalkKeyError);
    expect((caught as CrosswalkKeyError).code).toBe('ERR_CROSSWALK_KEY');
    expect((caught as Error).message).toMatch(message);
    // Never a secret in the message.
    for (const secret of [newSecret, oldSecret]) {
      expect((caught as Error).message).not.toContain(secret);
    }
  });

  it('or CROSSWALK_KEY alone (key 0), never both', () => {
    expect(keyringOf({ crosswalk_key: oldSecret })?.ids).toEqual([LEGACY_KEY_ID]);
    expect(keyringOf({ crosswalk_keys: `k2:${newSecret},0:${oldSecret}` })?.ids).toEqual([
      'k2',
      '0',
    ]);
    expect(keyringOf({})).toBeUndefined();
    expect(() =>
      keyringOf({ crosswalk_key: oldSecret, crosswalk_keys: `k2:${newSecret}` }),
    ).toThrow(/CROSSWALK_KEY and CROSSWALK_KEYS are both set/);
  });
});
