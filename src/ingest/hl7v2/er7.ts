import { ConcordanceError } from '../../errors/concordance-error.ts';
/**
 * A small, strict-enough reader of HL7 v2 ER7 ("pipe and hat") messages. It accepts what real feeds
 * send: CR, LF or CRLF between segments, a UTF-8 byte order mark, trailing spaces, blank lines.
 * Values stay raw (escaped) in the segments and are unescaped only when read, component by
 * component. Errors never quote the message: their text may end up in an ACK or a log.
 */

import { decodeBytes } from './charset.ts';
import { skipLeadingNoiseText } from './leading-noise.ts';

export interface Delimiters {
  field: string;
  component: string;
  repetition: string;
  escape: string;
  /** '' when MSH-2 names only three encoding characters (no subcomponents then). */
  subcomponent: string;
  /** The HL7 2.7+ truncation character, the fifth of MSH-2, when the message names one. */
  truncation?: string;
  /**
   * The character set `\Xhh\` escapes are read in: the message's own (an iconv-lite encoding).
   * @defaultValue `'utf-8'`
   */
  hexEncoding?: string;
}

export interface Segment {
  name: string;
  /** `fields[n]` is field n (raw); for MSH, `fields[1]` is the field separator itself. */
  fields: string[];
}

export interface Er7Message {
  delimiters: Delimiters;
  segments: Segment[];
}

/** The message cannot be read; `segment` and `field` say where (no content is quoted). */
export class Er7ParseError extends ConcordanceError {
  static readonly code = 'ERR_HL7V2_PARSE';
  readonly code = Er7ParseError.code;
  override readonly name = 'Er7ParseError';
  readonly segment: string | undefined;
  readonly sequence: number | undefined;
  /** The MSH could be read: an ACK can echo MSH-10. */
  readonly mshReadable: boolean;

  constructor(
    message: string,
    where: { segment?: string; sequence?: number; mshReadable: boolean },
  ) {
    super(message);
    this.segment = where.segment;
    this.sequence = where.sequence;
    this.mshReadable = where.mshReadable;
  }
}

const SEGMENT_NAME = /^[A-Z][A-Z0-9]{2}$/;
const ALLOWED_DELIMITER = /^[\x21-\x7e]$/;

/** A character usable as a delimiter: printable ASCII, neither a letter nor a digit. */
export function isDelimiterChar(c: string): boolean {
  return ALLOWED_DELIMITER.test(c) && !/[A-Za-z0-9]/.test(c);
}

/**
 * Reads the delimiters from the start of an MSH line, or undefined if they are unusable. MSH-2 (up
 * to the next field separator) holds three encoding characters (component, repetition, escape: no
 * subcomponent separator), the usual four, or five (HL7 2.7+: a truncation character last); all
 * distinct, none a letter or digit.
 */
function delimitersOf(msh: string): Delimiters | undefined {
  if (!msh.startsWith('MSH') || msh.length < 7) return undefined;
  const field = msh.charAt(3);
  const next = msh.indexOf(field, 4);
  const encoding = [...msh.slice(4, next === -1 ? msh.length : next)];
  if (encoding.length < 3 || encoding.length > 5) return undefined;
  const chars = [field, ...encoding];
  if (!chars.every(isDelimiterChar)) return undefined;
  if (new Set(chars).size !== chars.length) return undefined;
  const [component = '', repetition = '', escape = '', subcomponent = '', truncation] = encoding;
  return {
    field,
    component,
    repetition,
    escape,
    subcomponent,
    ...(truncation === undefined ? {} : { truncation }),
  };
}

/** MSH-2 as the message wrote it (three, four or five encoding characters). */
export function encodingCharacters(d: Delimiters): string {
  return `${d.component}${d.repetition}${d.escape}${d.subcomponent}${d.truncation ?? ''}`;
}

/**
 * Splits text into segment lines: CR, LF, CRLF; leading blank lines, spaces, stray VT bytes and a
 * BOM, blank lines and trailing blanks are dropped.
 */
export function segmentLines(text: string): string[] {
  const body = skipLeadingNoiseText(text);
  return body
    .split(/\r\n|\r|\n/)
    .map((line) => line.replace(/[ \t]+$/, ''))
    .filter((line) => line !== '');
}

/** `hexEncoding`: the message's character set, for `\Xhh\` escapes (see {@link Delimiters}). */
export function parseEr7(text: string, hexEncoding?: string): Er7Message {
  const lines = segmentLines(text);
  const first = lines[0];
  if (first === undefined) throw new Er7ParseError('empty message', { mshReadable: false });
  const found = delimitersOf(first);
  const delimiters =
    found === undefined || hexEncoding === undefined ? found : { ...found, hexEncoding };
  if (delimiters === undefined) {
    throw new Er7ParseError('the message does not start with a readable MSH segment', {
      segment: 'MSH',
      sequence: 1,
      mshReadable: false,
    });
  }
  const segments: Segment[] = [];
  let sequence = 0;
  for (const line of lines) {
    sequence += 1;
    const name = line.slice(0, 3);
    const rest = line.slice(3);
    if (!SEGMENT_NAME.test(name) || (rest !== '' && !rest.startsWith(delimiters.field))) {
      throw new Er7ParseError(`segment ${sequence} cannot be read`, {
        sequence,
        mshReadable: segments.length > 0,
      });
    }
    if (name === 'MSH' && sequence > 1) {
      throw new Er7ParseError(`segment ${sequence} is a second MSH`, {
        segment: 'MSH',
        sequence,
        mshReadable: true,
      });
    }
    const parts = rest === '' ? [] : rest.slice(1).split(delimiters.field);
    // MSH-1 is the field separator, MSH-2 the encoding characters: field numbers match the standard.
    const fields = name === 'MSH' ? [name, delimiters.field, ...parts] : [name, ...parts];
    segments.push({ name, fields });
  }
  return { delimiters, segments };
}

/** Replaces HL7 escape sequences (`\F\`, `\S\`, `\T\`, `\R\`, `\E\`, `\Xhh\`, `\.br\`…). */
export function unescapeValue(raw: string, d: Delimiters): string {
  if (!raw.includes(d.escape)) return raw;
  let out = '';
  let i = 0;
  while (i < raw.length) {
    const ch = raw.charAt(i);
    if (ch !== d.escape) {
      out += ch;
      i += 1;
      continue;
    }
    const end = raw.indexOf(d.escape, i + 1);
    if (end === -1) {
      out += raw.slice(i);
      break;
    }
    const seq = raw.slice(i + 1, end);
    i = end + 1;
    if (seq === 'F') out += d.field;
    else if (seq === 'S') out += d.component;
    else if (seq === 'T') out += d.subcomponent;
    else if (seq === 'R') out += d.repetition;
    else if (seq === 'E') out += d.escape;
    else if (/^X(?:[0-9A-Fa-f]{2})+$/.test(seq)) {
      // In the message's character set; bytes that do not decode stay as the escape itself, so
      // that two different escapes never read alike (never U+FFFD).
      const decoded = decodeBytes(Buffer.from(seq.slice(1), 'hex'), d.hexEncoding ?? 'utf-8');
      out += decoded ?? `${d.escape}${seq}${d.escape}`;
    } else if (seq === '.br' || /^\.sp/.test(seq)) out += ' ';
    // Highlighting (\H\, \N\), other formatting and unknown sequences are dropped.
  }
  return out;
}

/** The segments with this name, in order. */
export function segmentsNamed(message: Er7Message, name: string): Segment[] {
  return message.segments.filter((s) => s.name === name);
}

/** Raw field n of a segment ('' when absent). */
export function rawField(segment: Segment | undefined, n: number): string {
  return segment?.fields[n] ?? '';
}

/** The repetitions of a raw field (none when the field is empty). */
export function repetitions(raw: string, d: Delimiters): string[] {
  if (raw === '') return [];
  return raw.split(d.repetition);
}

/**
 * Component `c` (1-based), subcomponent `s` of one raw repetition, unescaped and trimmed; '' when
 * absent. `""` (HL7's explicit null) reads as ''.
 */
export function component(rawRep: string, c: number, d: Delimiters, s = 1): string {
  const comp = rawRep.split(d.component)[c - 1] ?? '';
  // Without a subcomponent separator the component is its only subcomponent.
  const sub = (d.subcomponent === '' ? [comp] : comp.split(d.subcomponent))[s - 1] ?? '';
  const value = unescapeValue(sub, d).trim();
  return value === '""' ? '' : value;
}

/** Component c of the first repetition of field n. */
export function value(
  segment: Segment | undefined,
  n: number,
  d: Delimiters,
  c = 1,
  s = 1,
): string {
  const first = repetitions(rawField(segment, n), d)[0] ?? '';
  return component(first, c, d, s);
}

/** Escapes text for use as one value inside a field. */
export function escapeValue(text: string, d: Delimiters): string {
  let out = '';
  for (const ch of text) {
    if (ch === d.escape) out += `${d.escape}E${d.escape}`;
    else if (ch === d.field) out += `${d.escape}F${d.escape}`;
    else if (ch === d.component) out += `${d.escape}S${d.escape}`;
    else if (ch === d.subcomponent) out += `${d.escape}T${d.escape}`;
    else if (ch === d.repetition) out += `${d.escape}R${d.escape}`;
    else if (ch === '\r' || ch === '\n') out += ' ';
    else out += ch;
  }
  return out;
}

/** HL7 DTM/DT (`YYYY[MM[DD[HH[MM[SS[.S]]]]]][+/-ZZZZ]`) → ISO 8601 date or datetime, else undefined. */
export function hl7DateToIso(text: string): string | undefined {
  const m = /^(\d{4})(\d{2})?(\d{2})?(?:(\d{2})(\d{2})?(\d{2})?(?:\.\d{1,4})?)?([+-]\d{4})?$/.exec(
    text,
  );
  if (!m) return undefined;
  const [, y, mo, da, h, mi, se, tz] = m;
  if (mo !== undefined && (Number(mo) < 1 || Number(mo) > 12)) return undefined;
  if (da !== undefined && (Number(da) < 1 || Number(da) > 31)) return undefined;
  let out = y ?? '';
  if (mo === undefined) return out;
  out += `-${mo}`;
  if (da === undefined) return out;
  out += `-${da}`;
  if (h === undefined) return out;
  if (Number(h) > 23 || Number(mi ?? '0') > 59 || Number(se ?? '0') > 59) return out;
  out += `T${h}:${mi ?? '00'}:${se ?? '00'}`;
  if (tz !== undefined) out += `${tz.slice(0, 3)}:${tz.slice(3)}`;
  return out;
}
