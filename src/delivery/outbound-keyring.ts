import type { KeyObject } from 'node:crypto';
import { ConcordanceError } from '../errors/concordance-error.ts';
import {
  keyIdOf,
  LEGACY_KEY_ID,
  parseKeyringText,
  type KeyringEntry,
} from '../identity/crosswalk-keyring.ts';
import { OutboundKeyError } from './outbound-key-error.ts';
import { openOutbound, outboundAesKey, sealOutbound } from './outbound-seal.ts';

/**
 * What seals and opens the `patient_id` of outbound events: a keyring ({@link OutboundKeyring}) or
 * keys without ids ({@link UnnamedOutboundKeys}).
 */
export interface OutboundKeys {
  /** `plaintext` sealed under the sealing key, bound to `aad` (the event id). */
  seal(plaintext: string, aad: string): string;
  /** The inverse of {@link OutboundKeys.seal}; throws when no key held opens it. */
  open(sealed: string, aad: string): string;
}

/** An outbound event names a key id the keyring does not hold (removed too early, or altered data). */
export class OutboundKeyIdError extends ConcordanceError {
  static readonly code = 'ERR_OUTBOUND_KEY_ID';
  readonly code = OutboundKeyIdError.code;

  readonly keyId: string;

  constructor(keyId: string) {
    super(
      `an outbound event is sealed under key id "${keyId}", which the outbound keyring does not hold ` +
        '(give the consumer the new key before the workers seal with it; remove an old key only once `keys status` shows nothing left under it)',
    );
    this.name = 'OutboundKeyIdError';
    this.keyId = keyId;
  }
}

interface AesKey {
  id: string;
  aesKey: KeyObject;
}

/** The sealed form under key `id`: `$<id>$<base64url>`, or the base64url alone for key `0`. */
const tagged = (id: string, body: string) => (id === LEGACY_KEY_ID ? body : `$${id}$${body}`);

/** The base64url part of a sealed value (without its `$<id>$`). */
const bodyOf = (sealed: string) => {
  const id = keyIdOf(sealed);
  return id === LEGACY_KEY_ID && !sealed.startsWith('$') ? sealed : sealed.slice(id.length + 2);
};

/**
 * The outbound keys of a process or a consumer: `OUTBOUND_KEYS=<id>:<secret>[,...]`, the sealing
 * key first, or `OUTBOUND_KEY` alone (key `0`). `patient_id` is sealed under the first key and
 * carries its id (`$<id>$<base64url>`; key `0`'s values carry none, as before keyrings); a value is
 * opened with the key its id names. The form and the rules are those of `CrosswalkKeyring`
 * (docs/security-and-privacy.md, key rotation; docs/delivery.md for the consumer's side).
 */
export class OutboundKeyring implements OutboundKeys {
  readonly #keys: readonly AesKey[];
  readonly #byId: ReadonlyMap<string, KeyObject>;

  private constructor(keys: readonly AesKey[]) {
    if (keys.length === 0) throw new OutboundKeyError('an outbound keyring needs a key');
    this.#keys = keys;
    this.#byId = new Map(keys.map(({ id, aesKey }) => [id, aesKey]));
  }

  /** Derives each key (HKDF, once); `variable` names the setting in errors, never a secret. */
  static fromEntries(
    entries: readonly KeyringEntry[],
    variable = 'OUTBOUND_KEYS',
  ): OutboundKeyring {
    const seen = new Set<string>();
    return new OutboundKeyring(
      entries.map(({ id, secret }) => {
        if (seen.has(id)) throw new OutboundKeyError(`${variable}: key id "${id}" is listed twice`);
        seen.add(id);
        return { id, aesKey: outboundAesKey(secret, `${variable} (key id "${id}")`) };
      }),
    );
  }

  /** A keyring from `OUTBOUND_KEYS` text; throws an {@link OutboundKeyError} naming the entry. */
  static parse(text: string, variable = 'OUTBOUND_KEYS'): OutboundKeyring {
    const entries = parseKeyringText(text, variable, (message) => new OutboundKeyError(message));
    return OutboundKeyring.fromEntries(entries, variable);
  }

  /** `OUTBOUND_KEY` alone: a keyring of one key, `0`, sealing exactly as before keyrings. */
  static legacy(secret: string, variable = 'OUTBOUND_KEY'): OutboundKeyring {
    return new OutboundKeyring([{ id: LEGACY_KEY_ID, aesKey: outboundAesKey(secret, variable) }]);
  }

  /** The key ids, the sealing key's first. */
  get ids(): string[] {
    return this.#keys.map(({ id }) => id);
  }

  /** The id new events are sealed under. */
  get sealingId(): string {
    return (this.#keys[0] as AesKey).id;
  }

  #subset(ids: readonly string[]): OutboundKeyring {
    return new OutboundKeyring(
      ids.map((id) => {
        const aesKey = this.#byId.get(id);
        if (aesKey === undefined) throw new OutboundKeyIdError(id);
        return { id, aesKey };
      }),
    );
  }

  /** This key alone (the sealing key: what a re-seal moves events to). */
  only(id: string): OutboundKeyring {
    return this.#subset([id]);
  }

  /** The other keys (all but the sealing key: what a re-seal moves events from). */
  without(id: string): OutboundKeyring {
    return this.#subset(this.ids.filter((other) => other !== id));
  }

  /** From every older key to the sealing key alone; undefined for a keyring of one key. */
  rotation(): { from: OutboundKeyring; to: OutboundKeyring } | undefined {
    if (this.#keys.length < 2) return undefined;
    return { from: this.without(this.sealingId), to: this.only(this.sealingId) };
  }

  seal(plaintext: string, aad: string): string {
    const { id, aesKey } = this.#keys[0] as AesKey;
    return tagged(id, sealOutbound(aesKey, plaintext, aad));
  }

  /**
   * Throws {@link OutboundKeyIdError} when the value's key id is not held, and an error when that
   * key does not open it (a wrong key under that id, or an altered event).
   */
  open(sealed: string, aad: string): string {
    const id = keyIdOf(sealed);
    const aesKey = this.#byId.get(id);
    if (aesKey === undefined) throw new OutboundKeyIdError(id);
    return openOutbound(aesKey, bodyOf(sealed), aad);
  }
}

/**
 * Keys given without ids (`OUTBOUND_KEY` texts or their AES keys, as `openOutboundEvent` took them
 * before keyrings): each is tried in turn on a value whatever id it names; seals with the first, in
 * the form of key `0`. For a consumer that has not moved to a keyring, and the offline rotation's
 * old key.
 */
export class UnnamedOutboundKeys implements OutboundKeys {
  readonly #aesKeys: readonly KeyObject[];

  constructor(keys: readonly (string | KeyObject)[]) {
    // A malformed key throws here: a configuration error, not a key that does not fit.
    this.#aesKeys = keys.map((key) => (typeof key === 'string' ? outboundAesKey(key) : key));
    if (this.#aesKeys.length === 0) throw new OutboundKeyError('no OUTBOUND_KEY given');
  }

  seal(plaintext: string, aad: string): string {
    return sealOutbound(this.#aesKeys[0] as KeyObject, plaintext, aad);
  }

  open(sealed: string, aad: string): string {
    const body = bodyOf(sealed);
    for (const aesKey of this.#aesKeys) {
      try {
        return openOutbound(aesKey, body, aad);
      } catch {
        // Not this key (or altered): try the next.
      }
    }
    throw new OutboundKeyError('no OUTBOUND_KEY given opens it');
  }
}

/** The outbound settings a keyring comes from (`delivery.outbound_queue`). */
export interface OutboundKeySettings {
  key?: string | undefined;
  keys?: string | undefined;
}

/**
 * The keyring of `OUTBOUND_KEYS`, or of `OUTBOUND_KEY` alone; undefined when neither is set. Both
 * set is refused, as for `CROSSWALK_KEY` / `CROSSWALK_KEYS`.
 */
export function outboundKeyringOf(settings: OutboundKeySettings): OutboundKeyring | undefined {
  const { key: single, keys: ring } = settings;
  if (single !== undefined && ring !== undefined) {
    throw new OutboundKeyError(
      'OUTBOUND_KEY and OUTBOUND_KEYS are both set: set OUTBOUND_KEYS alone (OUTBOUND_KEY=<s> is OUTBOUND_KEYS=0:<s>)',
    );
  }
  if (ring !== undefined) return OutboundKeyring.parse(ring);
  if (single !== undefined) return OutboundKeyring.legacy(single);
  return undefined;
}
