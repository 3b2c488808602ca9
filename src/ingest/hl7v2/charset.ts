import iconv from 'iconv-lite';

/**
 * HL7 v2 character sets (MSH-18, HL7 table 0211, and the names integration engines and sites use
 * besides) mapped to iconv-lite encodings. Every one of them is ASCII-compatible, so MSH, the
 * delimiters and CR/LF read the same in all: MSH-18 is read from the raw bytes before decoding.
 * UTF-16/UTF-32 (`UNICODE UTF-16`, `UNICODE UTF-32`) and the ISO 2022 JIS sets are not supported.
 */
const TABLE_0211: Readonly<Record<string, string>> = {
  ASCII: 'us-ascii',
  'ISO IR6': 'us-ascii',
  '8859/1': 'iso-8859-1',
  'ISO IR100': 'iso-8859-1',
  '8859/2': 'iso-8859-2',
  '8859/3': 'iso-8859-3',
  '8859/4': 'iso-8859-4',
  '8859/5': 'iso-8859-5',
  '8859/6': 'iso-8859-6',
  '8859/7': 'iso-8859-7',
  '8859/8': 'iso-8859-8',
  '8859/9': 'iso-8859-9',
  '8859/15': 'iso-8859-15',
  'UNICODE UTF-8': 'utf-8',
  // HL7 v2.3-v2.4 "UNICODE" without a form: in practice UTF-8 on the wire.
  UNICODE: 'utf-8',
  'GB 18030-2000': 'gb18030',
  'KS X 1001': 'euc-kr',
  'BIG-5': 'big5',
};

/** The usual non-table spellings (`UTF-8`, `ISO-8859-1`, `Latin1`, `windows-1252`, `cp1250`…). */
function aliasOf(normalized: string): string | undefined {
  const compact = normalized.replace(/[\s_-]/g, '');
  if (compact === 'UTF8') return 'utf-8';
  if (compact === 'USASCII') return 'us-ascii';
  if (compact === 'LATIN1') return 'iso-8859-1';
  const iso = /^ISO8859(1[0-6]|[1-9])$/.exec(compact);
  if (iso !== undefined && iso !== null && iso[1] !== '12') return `iso-8859-${iso[1]}`;
  const hl7Iso = /^8859\/(1[0-6]|[1-9])$/.exec(normalized);
  if (hl7Iso !== null && hl7Iso[1] !== '12') return `iso-8859-${hl7Iso[1]}`;
  const windows = /^(?:WINDOWS|WIN|CP)(125[0-8])$/.exec(compact);
  if (windows !== null) return `windows-${windows[1]}`;
  return undefined;
}

/**
 * The iconv-lite encoding of an HL7 character set name (case and surrounding blanks ignored), or
 * undefined when it is not supported. '' (MSH-18 empty) is not a name: the caller applies its
 * listener default.
 */
export function encodingOf(name: string): string | undefined {
  const known = resolved.get(name);
  if (known !== undefined || resolved.has(name)) return known;
  const encoding = lookUp(name);
  // Names come from the wire: remember a bounded number of them.
  if (resolved.size < 256) resolved.set(name, encoding);
  return encoding;
}

const resolved = new Map<string, string | undefined>();

function lookUp(name: string): string | undefined {
  const normalized = name.trim().toUpperCase().replace(/\s+/g, ' ');
  if (normalized === '') return undefined;
  const encoding = TABLE_0211[normalized] ?? aliasOf(normalized);
  return encoding !== undefined && iconv.encodingExists(encoding) ? encoding : undefined;
}

/** Table 0211 names of the encodings {@link encodingOf} returns (for MSH-18 of an ACK). */
const NAME_OF: Readonly<Record<string, string>> = {
  'us-ascii': 'ASCII',
  'utf-8': 'UNICODE UTF-8',
  gb18030: 'GB 18030-2000',
  'euc-kr': 'KS X 1001',
  big5: 'BIG-5',
};

/**
 * The HL7 table 0211 name of an iconv-lite encoding from {@link encodingOf}: `8859/1`,
 * `UNICODE UTF-8`, `ASCII`… The Windows code pages have no table 0211 name: they are named as
 * iconv-lite, Python, Java and iconv all know them (`windows-1252`).
 */
export function charsetNameOf(encoding: string): string {
  const iso = /^iso-8859-(\d+)$/.exec(encoding);
  if (iso !== null) return `8859/${iso[1]}`;
  return NAME_OF[encoding] ?? encoding;
}

/** True when `name` is a character set this ingester decodes (for config validation). */
export function isSupportedCharset(name: string): boolean {
  return encodingOf(name) !== undefined;
}

const CR = 0x0d;
const LF = 0x0a;

/**
 * MSH-18 (its first repetition) of a message's raw bytes: the first line starting with `MSH`
 * (a UTF-8 BOM skipped), read as Latin-1, which is exact for the ASCII header. '' when there is
 * no MSH or no MSH-18.
 */
export function msh18Of(bytes: Buffer): string {
  let start = 0;
  while (start < bytes.length) {
    const cr = bytes.indexOf(CR, start);
    const lf = bytes.indexOf(LF, start);
    const end = cr === -1 ? (lf === -1 ? bytes.length : lf) : lf === -1 ? cr : Math.min(cr, lf);
    let line = bytes.subarray(start, end);
    if (line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) line = line.subarray(3);
    if (line.length >= 8 && line.subarray(0, 3).toString('latin1') === 'MSH') {
      const text = line.toString('latin1');
      const field = text.charAt(3);
      const repetition = text.charAt(5);
      // fields[0] is MSH-2 (after MSH and MSH-1): MSH-n is fields[n - 2].
      const fields = text.slice(4).split(field);
      return (fields[16] ?? '').split(repetition)[0]?.trim() ?? '';
    }
    start = end + 1;
  }
  return '';
}

export type DecodeResult =
  | { ok: true; text: string; encoding: string }
  | { ok: false; reason: 'unsupported' | 'undecodable'; encoding?: string; name: string };

/**
 * Decodes one message's bytes. The character set is `preferred` when given (e.g. an HTTP
 * `Content-Type` charset), else MSH-18, else `fallback` (the listener's default). A message with
 * a byte sequence that is not valid in that character set is `undecodable` as a whole: nothing in
 * it is used, so that no identifier can hold U+FFFD and two different ids never read the same.
 */
export function decodeMessage(bytes: Buffer, fallback: string, preferred?: string): DecodeResult {
  const msh18 = msh18Of(bytes);
  const name = preferred ?? (msh18 === '' ? fallback : msh18);
  const encoding = encodingOf(name);
  if (encoding === undefined) return { ok: false, reason: 'unsupported', name };
  const text = iconv.decode(bytes, encoding);
  // iconv-lite turns every invalid or unmapped byte sequence into U+FFFD; a U+FFFD sent as such
  // (EF BF BD in UTF-8) is the mark of an earlier broken conversion and is refused too.
  if (text.includes('\uFFFD')) return { ok: false, reason: 'undecodable', encoding, name };
  return { ok: true, text, encoding };
}

/** Bytes in an iconv-lite encoding as text, or undefined when any of them does not decode. */
export function decodeBytes(bytes: Buffer, encoding: string): string | undefined {
  if (!iconv.encodingExists(encoding)) return undefined;
  const text = iconv.decode(bytes, encoding, { stripBOM: false });
  return text.includes('\uFFFD') ? undefined : text;
}

/** Text in an encoding from {@link encodingOf} (ACKs go back in the message's character set). */
export function encodeText(text: string, encoding: string): Buffer {
  return iconv.encode(text, encoding);
}
