import { z } from 'zod';
import { ConcordanceError } from '../errors/concordance-error.ts';
import { CrosswalkKeyError, deriveCrosswalkKeys, type CrosswalkKeys } from './crosswalk-keys.ts';

/**
 * The key id of `CROSSWALK_KEY` alone, and of every value sealed before keyrings existed: a value
 * sealed under this id carries no id (it is laid out as before), so a keyring of this one key
 * reads and writes exactly what earlier versions did.
 */
export const LEGACY_KEY_ID = '0';

/** What a key id may be: short, and nothing that base64, `:` or `,` could confuse. */
const KEY_ID = /^[A-Za-z0-9_-]{1,16}$/;

/**
 * A value sealed under key id `k` (other than {@link LEGACY_KEY_ID}) is `$k$<base64>`: `$` is not
 * in the base64 alphabet, so a value without the prefix is a legacy one.
 */
const TAGGED = /^\$([A-Za-z0-9_-]{1,16})\$/;

/** A sealed value names a key id the keyring does not hold (removed too early, or altered data). */
export class CrosswalkKeyIdError extends ConcordanceError {
  static readonly code = 'ERR_CROSSWALK_KEY_ID';
  readonly code = CrosswalkKeyIdError.code;

  readonly keyId: string;

  constructor(keyId: string) {
    super(
      `a value is sealed under crosswalk key id "${keyId}", which CROSSWALK_KEYS does not hold ` +
        '(was it removed before `keys status` showed nothing left under it?)',
    );
    this.name = 'CrosswalkKeyIdError';
    this.keyId = keyId;
  }
}

/** One key of a keyring, its id and its secret (as `CROSSWALK_KEYS` lists them). */
export interface KeyringEntry {
  id: string;
  secret: string;
}

const KeyringTextSchema = z
  .string()
  .transform((text) =>
    text
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ''),
  )
  .pipe(
    z
      .array(
        z
          .string()
          .regex(/^[^:]+:.+$/, 'an entry must be <id>:<secret>')
          .transform((entry) => {
            const colon = entry.indexOf(':');
            return { id: entry.slice(0, colon).trim(), secret: entry.slice(colon + 1).trim() };
          })
          .pipe(
            z.object({
              id: z.string().regex(KEY_ID, 'a key id is 1 to 16 of A-Z a-z 0-9 _ -'),
              secret: z.string().min(1),
            }),
          ),
      )
      .min(1, 'it lists no key')
      .superRefine((entries, ctx) => {
        const seen = new Set<string>();
        for (const { id } of entries) {
          if (seen.has(id))
            ctx.addIssue({ code: 'custom', message: `key id "${id}" is listed twice` });
          seen.add(id);
        }
      }),
  );

/**
 * The entries of a `CROSSWALK_KEYS` value (`<id>:<secret>[,<id>:<secret>...]`, the sealing key
 * first). Throws a {@link CrosswalkKeyError} naming the variable and the entry, never a secret
 * (or the error `fail` makes: `OUTBOUND_KEYS` has the same form and its own error).
 */
export function parseKeyringText(
  text: string,
  variable = 'CROSSWALK_KEYS',
  fail: (message: string) => Error = (message) => new CrosswalkKeyError(message),
): KeyringEntry[] {
  const parsed = KeyringTextSchema.safeParse(text);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? ` (entry ${Number(issue.path[0]) + 1})` : '';
  throw fail(`${variable}${where}: ${issue?.message ?? 'malformed'}`);
}

interface DerivedKey {
  id: string;
  keys: CrosswalkKeys;
}

/**
 * The crosswalk keys of a process: one or more keys, each with its id. Values are sealed under the
 * first (the sealing key) and carry its id; a value is opened with the key its id names, whichever
 * it is; lookups are tried under each key, the sealing key's first. So a key can be added
 * (readable), made the sealing key, and removed once nothing rests under it, by rolling restarts
 * with `keys rotate --live` in between (docs/security-and-privacy.md, key rotation).
 */
export class CrosswalkKeyring implements CrosswalkKeys {
  readonly #keys: readonly DerivedKey[];
  readonly #byId: ReadonlyMap<string, CrosswalkKeys>;

  private constructor(keys: readonly DerivedKey[]) {
    const [sealing] = keys;
    if (sealing === undefined) throw new CrosswalkKeyError('a crosswalk keyring needs a key');
    this.#keys = keys;
    this.#byId = new Map(keys.map(({ id, keys: k }) => [id, k]));
  }

  /** Derives each key (HKDF, once); `variable` names the setting in errors. */
  static fromEntries(
    entries: readonly KeyringEntry[],
    variable = 'CROSSWALK_KEYS',
  ): CrosswalkKeyring {
    const seen = new Set<string>();
    return new CrosswalkKeyring(
      entries.map(({ id, secret }) => {
        if (!KEY_ID.test(id))
          throw new CrosswalkKeyError(`${variable}: key id "${id}" is malformed`);
        if (seen.has(id))
          throw new CrosswalkKeyError(`${variable}: key id "${id}" is listed twice`);
        seen.add(id);
        return { id, keys: deriveCrosswalkKeys(secret, `${variable} (key id "${id}")`) };
      }),
    );
  }

  /** A keyring from `CROSSWALK_KEYS` text. */
  static parse(text: string, variable = 'CROSSWALK_KEYS'): CrosswalkKeyring {
    return CrosswalkKeyring.fromEntries(parseKeyringText(text, variable), variable);
  }

  /** `CROSSWALK_KEY` alone: a keyring of one key, {@link LEGACY_KEY_ID}. */
  static legacy(secret: string, variable = 'CROSSWALK_KEY'): CrosswalkKeyring {
    return new CrosswalkKeyring([
      { id: LEGACY_KEY_ID, keys: deriveCrosswalkKeys(secret, variable) },
    ]);
  }

  /** The key ids, the sealing key's first. */
  get ids(): string[] {
    return this.#keys.map(({ id }) => id);
  }

  /** The id new values are sealed under. */
  get sealingId(): string {
    return this.#sealing.id;
  }

  get #sealing(): DerivedKey {
    return this.#keys[0] as DerivedKey;
  }

  /** A keyring of some of these keys (same derived keys), in the order given. */
  #subset(ids: readonly string[]): CrosswalkKeyring {
    return new CrosswalkKeyring(
      ids.map((id) => {
        const keys = this.#byId.get(id);
        if (keys === undefined) throw new CrosswalkKeyIdError(id);
        return { id, keys };
      }),
    );
  }

  /** This key alone (e.g. the sealing key: what a re-seal moves values to). */
  only(id: string): CrosswalkKeyring {
    return this.#subset([id]);
  }

  /** The other keys (e.g. all but the sealing key: what a re-seal moves values from). */
  without(id: string): CrosswalkKeyring {
    return this.#subset(this.ids.filter((other) => other !== id));
  }

  /**
   * What a live re-seal moves values between: `from` every older key, `to` the sealing key alone.
   * Undefined for a keyring of one key (nothing to move).
   */
  rotation(): { from: CrosswalkKeyring; to: CrosswalkKeyring } | undefined {
    if (this.#keys.length < 2) return undefined;
    return { from: this.without(this.sealingId), to: this.only(this.sealingId) };
  }

  lookup(value: string): string {
    return this.#sealing.keys.lookup(value);
  }

  lookups(value: string): string[] {
    return [...new Set(this.#keys.map(({ keys }) => keys.lookup(value)))];
  }

  seal(plaintext: string | Buffer, context: string): string {
    const { id, keys } = this.#sealing;
    const sealed = keys.seal(plaintext, context);
    return id === LEGACY_KEY_ID ? sealed : `$${id}$${sealed}`;
  }

  /** Throws {@link CrosswalkKeyIdError} when the value's key id is not held, and as `open` does. */
  open(sealed: string, context: string): Buffer {
    const id = keyIdOf(sealed);
    const keys = this.#byId.get(id);
    if (keys === undefined) throw new CrosswalkKeyIdError(id);
    return keys.open(id === LEGACY_KEY_ID ? sealed : sealed.slice(id.length + 2), context);
  }
}

/** The key id a sealed value names ({@link LEGACY_KEY_ID} for a value without one). */
export function keyIdOf(sealed: string): string {
  return TAGGED.exec(sealed)?.[1] ?? LEGACY_KEY_ID;
}

/** The identity settings a keyring comes from (`identity` of the configuration). */
export interface KeyringSettings {
  crosswalk_key?: string | undefined;
  crosswalk_keys?: string | undefined;
}

/**
 * The keyring of `CROSSWALK_KEYS`, or of `CROSSWALK_KEY` alone; undefined when neither is set.
 * Setting both is refused (which one would win is a question nobody should have to answer).
 */
export function keyringOf(settings: KeyringSettings): CrosswalkKeyring | undefined {
  const { crosswalk_key: single, crosswalk_keys: ring } = settings;
  if (single !== undefined && ring !== undefined) {
    throw new CrosswalkKeyError(
      'CROSSWALK_KEY and CROSSWALK_KEYS are both set: set CROSSWALK_KEYS alone (CROSSWALK_KEY=<s> is CROSSWALK_KEYS=0:<s>)',
    );
  }
  if (ring !== undefined) return CrosswalkKeyring.parse(ring);
  if (single !== undefined) return CrosswalkKeyring.legacy(single);
  return undefined;
}
