import { createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyIdOf, LEGACY_KEY_ID } from '../identity/crosswalk-keyring.ts';
import { openOutboundEvent } from './open-outbound-event.ts';
import { sealOutboundEvent } from './outbound-event.ts';
import { OutboundKeyError } from './outbound-key-error.ts';
import {
  OutboundKeyIdError,
  OutboundKeyring,
  outboundKeyringOf,
  UnnamedOutboundKeys,
} from './outbound-keyring.ts';
import { openOutbound, outboundAesKey, sealOutbound } from './outbound-seal.ts';
import type { ResultEvent } from '../interface/result-event.ts';

const secret = () => randomBytes(32).toString('base64');
const [oldKey, newKey, otherKey] = [secret(), secret(), secret()];
const PLANTED = 'MRN-OUTBOUND-KEYRING-77';

const event: ResultEvent = {
  id: '6f1c2b1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b',
  type: 'concordance.completed',
  created_at: '2024-05-01T10:00:00.000Z',
  patient_id: PLANTED,
  patient_service_id: 'psid-1',
  ccsr_category: 'END002',
  record_version: 1,
  triggered_by: {
    event_ids: ['evt-1'],
    count: 1,
    first_update_at: '2024-05-01T09:59:59.000Z',
    last_update_at: '2024-05-01T09:59:59.000Z',
  },
  remote_job_id: 'job-1',
  status: 'completed',
  concordance: { concordant: true, guidelines: [{ id: 'ADA-2026-9.1', met: true }] },
  error: null,
};

/** What `fn` throws (the test fails when it throws nothing). */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}

/** The consumer's recipe of docs/delivery.md, with nothing but node:crypto: the key id, then AES-GCM. */
function openAsDocumented(
  sealed: string,
  eventId: string,
  secrets: Record<string, string>,
): string {
  const tag = /^\$([A-Za-z0-9_-]{1,16})\$/.exec(sealed);
  const [id, rest] = tag === null ? ['0', sealed] : [tag[1] ?? '', sealed.slice(tag[0].length)];
  const secret = secrets[id];
  if (secret === undefined) throw new Error(`no key "${id}"`);
  const key = Buffer.from(
    hkdfSync(
      'sha256',
      Buffer.from(secret, 'base64'),
      Buffer.alloc(0),
      'concordance-worker outbound v1',
      32,
    ),
  );
  const raw = Buffer.from(rest, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(eventId, 'utf8'));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

describe('OutboundKeyring', () => {
  it('seals in the form docs/delivery.md tells a consumer in any language to open', () => {
    const secrets = { '0': oldKey, o1: newKey };
    const legacy = OutboundKeyring.legacy(oldKey).seal(PLANTED, 'evt-9');
    const tagged = OutboundKeyring.parse(`o1:${newKey},0:${oldKey}`).seal(PLANTED, 'evt-9');
    expect(openAsDocumented(legacy, 'evt-9', secrets)).toBe(PLANTED);
    expect(openAsDocumented(tagged, 'evt-9', secrets)).toBe(PLANTED);
    expect(() => openAsDocumented(tagged, 'evt-9', { '0': oldKey })).toThrow('no key "o1"');
  });

  it('seals under the newest (first) key with its id, and opens what any key it holds sealed', () => {
    const before = OutboundKeyring.legacy(oldKey);
    const during = OutboundKeyring.parse(`o1:${newKey},0:${oldKey}`);
    const sealedBefore = before.seal(PLANTED, 'evt-1');
    const sealedNow = during.seal(PLANTED, 'evt-1');
    expect(during.sealingId).toBe('o1');
    expect(during.ids).toEqual(['o1', '0']);
    expect(keyIdOf(sealedNow)).toBe('o1');
    expect(sealedNow).toMatch(/^\$o1\$[A-Za-z0-9_-]+$/);
    expect(sealedNow).not.toContain(PLANTED);
    expect(during.open(sealedBefore, 'evt-1')).toBe(PLANTED);
    expect(during.open(sealedNow, 'evt-1')).toBe(PLANTED);
    // The event id is still bound.
    expect(() => during.open(sealedNow, 'evt-2')).toThrow();
    // A consumer's phase-1 keyring (new key readable, old one first) opens what phase 2 seals.
    const consumer = OutboundKeyring.parse(`0:${oldKey},o1:${newKey}`);
    expect(keyIdOf(consumer.seal('x', 'e'))).toBe(LEGACY_KEY_ID);
    expect(consumer.open(sealedNow, 'evt-1')).toBe(PLANTED);
    // The final keyring alone opens what the sealing key sealed, and the body is the documented
    // base64url(iv | tag | ciphertext) under that key's HKDF.
    expect(OutboundKeyring.parse(`o1:${newKey}`).open(sealedNow, 'evt-1')).toBe(PLANTED);
    expect(openOutbound(outboundAesKey(newKey), sealedNow.slice('$o1$'.length), 'evt-1')).toBe(
      PLANTED,
    );
  });

  it('refuses an event under a key id it does not hold with ERR_OUTBOUND_KEY_ID, naming the id only', () => {
    const during = OutboundKeyring.parse(`o1:${newKey},0:${oldKey}`);
    const data = sealOutboundEvent(event, during);
    const after = OutboundKeyring.parse(`o2:${otherKey}`);
    const err = thrown(() => openOutboundEvent(data, after));
    expect(err).toBeInstanceOf(OutboundKeyIdError);
    expect((err as OutboundKeyIdError).code).toBe('ERR_OUTBOUND_KEY_ID');
    expect((err as OutboundKeyIdError).keyId).toBe('o1');
    expect(err.message).toContain('"o1"');
    for (const hidden of [PLANTED, newKey, oldKey, otherKey, data.patient_id_sealed ?? '']) {
      expect(err.message).not.toContain(hidden);
    }
    // A legacy event (no id) and a keyring without key 0: the same error, naming id 0.
    const legacy = sealOutboundEvent(event, OutboundKeyring.legacy(oldKey));
    expect((thrown(() => openOutboundEvent(legacy, after)) as OutboundKeyIdError).keyId).toBe('0');
    // A key under the right id that does not fit: ERR_OUTBOUND_KEY, as before keyrings.
    const wrong = OutboundKeyring.parse(`o1:${otherKey}`);
    expect(thrown(() => openOutboundEvent(data, wrong))).toBeInstanceOf(OutboundKeyError);
  });

  it('seals with key 0 exactly as OUTBOUND_KEY always did, and reads those events unchanged', () => {
    const aesKey = outboundAesKey(oldKey);
    const plain = sealOutbound(aesKey, PLANTED, 'evt-1');
    const legacy = OutboundKeyring.legacy(oldKey);
    const sealed = legacy.seal(PLANTED, 'evt-1');
    expect(sealed).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(sealed.length).toBe(plain.length);
    expect(openOutbound(aesKey, sealed, 'evt-1')).toBe(PLANTED);
    expect(OutboundKeyring.parse(`o1:${newKey},0:${oldKey}`).open(plain, 'evt-1')).toBe(PLANTED);
    // A consumer written before keyrings (one key, or a list tried in turn) reads key 0's events…
    const data = sealOutboundEvent(event, legacy);
    expect(openOutboundEvent(data, oldKey)).toEqual(event);
    expect(openOutboundEvent(data, [newKey, oldKey])).toEqual(event);
    // …and keys without ids are tried on a tagged event too (the offline rotation's old key).
    const tagged = sealOutboundEvent(event, OutboundKeyring.parse(`o1:${newKey}`));
    expect(openOutboundEvent(tagged, [oldKey, newKey])).toEqual(event);
    expect(new UnnamedOutboundKeys([newKey]).open(tagged.patient_id_sealed ?? '', event.id)).toBe(
      PLANTED,
    );
    expect(() => openOutboundEvent(tagged, oldKey)).toThrow(/no OUTBOUND_KEY given opens/);
  });

  it('takes OUTBOUND_KEYS or OUTBOUND_KEY, never both, and names the entry but never a secret', () => {
    expect(outboundKeyringOf({})).toBeUndefined();
    expect(outboundKeyringOf({ key: oldKey })?.ids).toEqual(['0']);
    expect(outboundKeyringOf({ keys: `o1:${newKey}, 0:${oldKey}` })?.ids).toEqual(['o1', '0']);
    const both = thrown(() => outboundKeyringOf({ key: oldKey, keys: `o1:${newKey}` }));
    expect(both).toBeInstanceOf(OutboundKeyError);
    expect(both.message).toContain('OUTBOUND_KEY and OUTBOUND_KEYS are both set');
    const cases: [string, RegExp][] = [
      [`o1:${newKey},o1:${oldKey}`, /key id "o1" is listed twice/],
      [`o1 ${newKey}`, /OUTBOUND_KEYS \(entry 1\): an entry must be <id>:<secret>/],
      [`bad.id:${newKey}`, /a key id is 1 to 16/],
      [`o1:${newKey},o2:c2hvcnQ=`, /OUTBOUND_KEYS \(key id "o2"\) must hold at least 32 bytes/],
      [' , ', /it lists no key/],
    ];
    for (const [text, message] of cases) {
      const err = thrown(() => OutboundKeyring.parse(text));
      expect(err).toBeInstanceOf(OutboundKeyError);
      expect(err.message).toMatch(message);
      expect(err.message).not.toContain(newKey);
      expect(err.message).not.toContain(oldKey);
    }
  });

  it('gives the re-seal its keys: from every older key to the sealing key alone', () => {
    const ring = OutboundKeyring.parse(`o2:${otherKey},o1:${newKey},0:${oldKey}`);
    const rotation = ring.rotation();
    expect(rotation?.from.ids).toEqual(['o1', '0']);
    expect(rotation?.to.ids).toEqual(['o2']);
    expect(OutboundKeyring.parse(`o2:${otherKey}`).rotation()).toBeUndefined();
    const underOld = OutboundKeyring.parse(`o1:${newKey}`).seal(PLANTED, 'e');
    expect(rotation?.from.open(underOld, 'e')).toBe(PLANTED);
    expect(() => rotation?.to.open(underOld, 'e')).toThrow(OutboundKeyIdError);
  });
});
