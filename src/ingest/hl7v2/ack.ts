import { randomUUID } from 'node:crypto';
import {
  encodingCharacters,
  escapeValue,
  rawField,
  type Delimiters,
  type Er7Message,
} from './er7.ts';

export type AckCode = 'AA' | 'AE' | 'AR';

export interface AckError {
  /** HL7 table 0357 (100 segment sequence, 101 required field missing, 102 data type, 207 internal). */
  code: string;
  text: string;
  /** ERR-2 location, e.g. `PID^1^3`. */
  location?: string;
}

export interface AckOptions {
  /**
   * MSH-18 of the ACK: the character set the ACK is sent in, as an HL7 table 0211 name (see
   * `charsetNameOf`). @defaultValue `'UNICODE UTF-8'`
   */
  charset?: string;
  /**
   * MSA-2 when `message` is undefined: the MSH-10 of a message whose MSH could not be read as a
   * whole (escaped with the standard delimiters). @defaultValue none (MSA-2 empty)
   */
  controlId?: string;
  /** @defaultValue now */
  now?: Date;
}

const STANDARD: Delimiters = {
  field: '|',
  component: '^',
  repetition: '~',
  escape: '\\',
  subcomponent: '&',
};

const ERROR_NAMES: Readonly<Record<string, string>> = {
  '100': 'Segment sequence error',
  '101': 'Required field missing',
  '102': 'Data type error',
  '200': 'Unsupported message type',
  '207': 'Application internal error',
};

function timestamp(now: Date): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${now.getUTCFullYear()}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}${pad(
    now.getUTCHours(),
  )}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}+0000`;
}

/**
 * The ACK of a message: sender and receiver swapped, `ACK^<trigger>^ACK`, MSA-1 the code, MSA-2 the
 * original MSH-10, MSH-18 the ACK's character set, and for AE/AR an ERR that says what is wrong
 * (never quoting the message). MSH-2 repeats the message's encoding characters (three, four or
 * five). Without a readable MSH (`message` undefined) the header fields are empty and MSA-2 is
 * `options.controlId`, if any. Segments end with CR.
 */
export function buildAck(
  message: Er7Message | undefined,
  code: AckCode,
  error?: AckError,
  options: AckOptions = {},
): string {
  const d = message?.delimiters ?? STANDARD;
  const msh = message?.segments[0];
  const f = d.field;
  const encoding = encodingCharacters(d);
  const now = options.now ?? new Date();
  const raw = (n: number) => rawField(msh, n);
  const trigger = (raw(9).split(d.repetition)[0] ?? '').split(d.component)[1] ?? '';
  const header = [
    `MSH${f}${encoding}`,
    raw(5),
    raw(6),
    raw(3),
    raw(4),
    timestamp(now),
    '',
    `ACK${d.component}${trigger}${d.component}ACK`,
    escapeValue(randomUUID().replaceAll('-', '').slice(0, 20), d),
    raw(11) || 'P',
    raw(12) || '2.5.1',
    // MSH-13 to MSH-17 empty, MSH-18 the character set.
    '',
    '',
    '',
    '',
    '',
    escapeValue(options.charset ?? 'UNICODE UTF-8', d),
  ].join(f);
  const segments = [header];
  const controlId =
    message === undefined ? escapeValue(options.controlId ?? '', STANDARD) : raw(10);
  if (error === undefined) {
    segments.push(['MSA', code, controlId].join(f));
  } else {
    const text = escapeValue(error.text, d);
    segments.push(['MSA', code, controlId, text].join(f));
    const name = ERROR_NAMES[error.code] ?? 'Error';
    segments.push(
      [
        'ERR',
        '',
        error.location ?? '',
        [error.code, escapeValue(name, d), 'HL70357'].join(d.component),
        'E',
        '',
        '',
        '',
        text,
      ].join(f),
    );
  }
  return `${segments.join('\r')}\r`;
}
