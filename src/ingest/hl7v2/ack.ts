import { randomUUID } from 'node:crypto';
import { escapeValue, rawField, type Delimiters, type Er7Message } from './er7.ts';

export type AckCode = 'AA' | 'AE' | 'AR';

export interface AckError {
  /** HL7 table 0357 (100 segment sequence, 101 required field missing, 102 data type, 207 internal). */
  code: string;
  text: string;
  /** ERR-2 location, e.g. `PID^1^3`. */
  location?: string;
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
 * original MSH-10, and for AE/AR an ERR that says what is wrong (never quoting the message). Without
 * a readable MSH (`message` undefined) the header fields are empty. Segments end with CR.
 */
export function buildAck(
  message: Er7Message | undefined,
  code: AckCode,
  error?: AckError,
  now: Date = new Date(),
): string {
  const d = message?.delimiters ?? STANDARD;
  const msh = message?.segments[0];
  const f = d.field;
  const encoding = `${d.component}${d.repetition}${d.escape}${d.subcomponent}`;
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
  ].join(f);
  const segments = [header];
  const controlId = raw(10);
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
