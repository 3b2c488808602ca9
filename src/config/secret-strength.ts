/**
 * Minimum-strength checks for secrets. Each check returns the reasons a value is too weak (empty
 * when it will do); a reason never repeats the value. The checks catch what people actually
 * paste — short keys, one byte or character repeated, short repeating patterns, runs such as
 * `abcdef...`, placeholders (`change-me`, `<your key>`) and values published as examples — not
 * every weak value: a secret must still come from a random source (`openssl rand -base64 32`).
 */

/** What a key must hold, decoded. */
export interface KeyStrengthOptions {
  /** @defaultValue 32 */
  minBytes?: number;
}

/** What a bearer token must hold. */
export interface TokenStrengthOptions {
  /** @defaultValue 16 */
  minLength?: number;
  /** Different characters at least (16 random hex characters have 5 or more in all but ~1 in a million). @defaultValue 5 */
  minDistinct?: number;
}

/**
 * Values published as examples (this project's README before issue 8, the Standard Webhooks
 * documentation): whoever uses one shares it with everyone who read the page.
 */
const KNOWN_SAMPLES: readonly string[] = [
  'change-me-engine-token-1',
  'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
];

/** Words that make a whole value a placeholder (compared without case and punctuation). */
const PLACEHOLDER_WORDS = new Set([
  'secret',
  'password',
  'passwd',
  'token',
  'apikey',
  'key',
  'example',
  'sample',
  'test',
  'dummy',
  'default',
  'none',
  'null',
  'undefined',
  'todo',
  'fixme',
  'tbd',
]);

/** Fragments that make any value a placeholder. */
const PLACEHOLDER_FRAGMENTS = [
  'changeme',
  'changethis',
  'replaceme',
  'placeholder',
  'yourtoken',
  'yourkey',
  'yourapikey',
  'yoursecret',
  'insertkey',
  'inserttoken',
  'redacted',
];

const generateHint = (name: string) =>
  `generate one with \`openssl rand -base64 32\` and set ${name}`;

/** Strict base64 (standard or URL alphabet, padding optional) or 64+ hex digits, as `CROSSWALK_KEY` is read. */
export function decodeKeyText(value: string): Buffer | undefined {
  const text = value.trim();
  if (/^[0-9a-f]{64,}$/i.test(text)) return Buffer.from(text, 'hex');
  if (!/^[A-Za-z0-9+/_-]+=*$/.test(text)) return undefined;
  const bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  const unpadded = (s: string) => s.replace(/=+$/, '');
  const canonical = unpadded(bytes.toString('base64'));
  if (bytes.length === 0 || canonical !== unpadded(text.replace(/-/g, '+').replace(/_/g, '/'))) {
    return undefined;
  }
  return bytes;
}

/** The smallest period `p` (at most a quarter of the length) such that the sequence repeats every `p`. */
function shortPeriod<T>(items: ArrayLike<T>): number | undefined {
  const n = items.length;
  for (let p = 1; p * 4 <= n; p++) {
    let periodic = true;
    for (let i = p; i < n && periodic; i++) periodic = items[i] === items[i - p];
    if (periodic) return p;
  }
  return undefined;
}

/** True for a run with one constant step (`00 01 02 ...`, `abcd...`, `9876...`). */
function isRun(codes: readonly number[], modulo?: number): boolean {
  if (codes.length < 3) return false;
  const step = (i: number) => {
    const d = (codes[i] ?? 0) - (codes[i - 1] ?? 0);
    return modulo === undefined ? d : (d + modulo) % modulo;
  };
  const first = step(1);
  if (first === 0) return false;
  for (let i = 2; i < codes.length; i++) if (step(i) !== first) return false;
  return true;
}

const ALPHANUMERIC = '0123456789abcdefghijklmnopqrstuvwxyz';

/** True for `abcdefgh...`, `0123456789abcdef...`, `zyxw...` (letters and digits, any case). */
function isCharacterRun(value: string): boolean {
  const indices = [...value.toLowerCase()].map((c) => ALPHANUMERIC.indexOf(c));
  if (indices.some((i) => i < 0)) return false;
  return isRun(indices, ALPHANUMERIC.length);
}

function isKnownSample(bytes: Buffer): boolean {
  return KNOWN_SAMPLES.some((sample) => {
    const decoded = decodeKeyText(sample.replace(/^whsec_/, ''));
    return (
      Buffer.from(sample, 'utf8').equals(bytes) || (decoded !== undefined && decoded.equals(bytes))
    );
  });
}

/** Problems of a key as bytes: length, repeated bytes, patterns, published samples. */
export function checkKeyBytes(
  name: string,
  bytes: Buffer,
  { minBytes = 32 }: KeyStrengthOptions = {},
): string[] {
  if (bytes.length < minBytes) {
    return [
      `${name} holds ${bytes.length} bytes; at least ${minBytes} are required: ${generateHint(name)}`,
    ];
  }
  const distinct = new Set(bytes).size;
  if (distinct === 1) return [`${name} is one byte repeated: ${generateHint(name)}`];
  const needed = Math.min(16, Math.ceil(bytes.length / 2));
  if (distinct < needed) {
    return [
      `${name} holds only ${distinct} different byte values (random bytes give about ${needed * 2}): ${generateHint(name)}`,
    ];
  }
  if (shortPeriod(bytes) !== undefined)
    return [`${name} is a short pattern repeated: ${generateHint(name)}`];
  if (isRun([...bytes], 256)) return [`${name} is a counting sequence: ${generateHint(name)}`];
  if (isKnownSample(bytes)) {
    return [`${name} is a published example value, known to everyone: ${generateHint(name)}`];
  }
  return [];
}

/** Problems of a key given as base64 or hex text (`CROSSWALK_KEY`, an outbound key). */
export function checkSecretKey(
  name: string,
  value: string,
  options: KeyStrengthOptions = {},
): string[] {
  const bytes = decodeKeyText(value);
  if (bytes === undefined) return [`${name} must be base64 or hex: ${generateHint(name)}`];
  return checkKeyBytes(name, bytes, options);
}

/**
 * Problems of a Standard Webhooks secret: `whsec_` + base64 of at least 24 random bytes (the
 * specification allows 24 to 64; 32 are recommended).
 */
export function checkWebhookSecret(name: string, value: string): string[] {
  const hint = `generate one with \`echo whsec_$(openssl rand -base64 32)\` and set ${name}`;
  if (!value.startsWith('whsec_')) return [`${name} must be whsec_ + base64: ${hint}`];
  const bytes = decodeKeyText(value.slice('whsec_'.length));
  if (bytes === undefined) return [`${name} must be whsec_ + base64: ${hint}`];
  return checkKeyBytes(name, bytes, { minBytes: 24 }).map((problem) =>
    problem.replace(generateHint(name), hint),
  );
}

function placeholder(value: string): boolean {
  const text = value.trim();
  if (/^<.*>$|^\$\{.*\}$|^\{\{.*\}\}$|^%.*%$/.test(text)) return true;
  const letters = text.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (letters === '' || PLACEHOLDER_WORDS.has(letters)) return true;
  if (/^x+$/.test(letters)) return true;
  return PLACEHOLDER_FRAGMENTS.some((fragment) => letters.includes(fragment));
}

/**
 * Problems of a credential someone else issues (`SERVICE_API_KEY`, `FHIR_TOKEN`): its form is
 * theirs, so only the obvious is refused — empty, one character repeated, a placeholder, a
 * published example.
 */
export function checkCredential(
  name: string,
  value: string,
  knownSamples: readonly string[] = [],
): string[] {
  if (value.trim() === '') return [`${name} is empty`];
  if (new Set(value).size === 1) return [`${name} is one character repeated`];
  if (placeholder(value) || (value.length >= 4 && isCharacterRun(value))) {
    return [`${name} looks like a placeholder, not a real credential`];
  }
  if ([...KNOWN_SAMPLES, ...knownSamples].includes(value.trim())) {
    return [`${name} is a published example value, known to everyone`];
  }
  return [];
}

/**
 * Problems of a bearer token we accept (`INGEST_TOKENS`): at least `minLength` characters, enough
 * different ones, no short repeated pattern, no run (`abcdefgh...`), no placeholder or sample.
 */
export function checkToken(
  name: string,
  value: string,
  { minLength = 16, minDistinct = 5 }: TokenStrengthOptions = {},
): string[] {
  const hint = `generate one with \`openssl rand -base64 24\``;
  const chars = [...value];
  if (chars.length < minLength) {
    return [
      `${name}: a token must hold at least ${minLength} characters (this one holds ${chars.length}): ${hint}`,
    ];
  }
  const distinct = new Set(chars).size;
  if (distinct === 1) return [`${name}: a token is one character repeated: ${hint}`];
  if (distinct < minDistinct) {
    return [
      `${name}: a token holds only ${distinct} different characters (at least ${minDistinct}): ${hint}`,
    ];
  }
  if (shortPeriod(chars) !== undefined)
    return [`${name}: a token is a short pattern repeated: ${hint}`];
  if (isCharacterRun(value))
    return [`${name}: a token is a run of consecutive characters: ${hint}`];
  const credential = checkCredential(name, value);
  return credential.map((problem) => `${problem}: ${hint}`);
}
