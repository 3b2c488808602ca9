import { describe, expect, it } from 'vitest';
import { buildAck } from './ack.ts';
import {
  component,
  Er7ParseError,
  unescapeValue,
  hl7DateToIso,
  parseEr7,
  rawField,
  repetitions,
  value,
} from './er7.ts';

const MSH = 'MSH|^~\\&|SEND|FAC|RECV|RFAC|20260101120000||ADT^A08^ADT_A01|CTRL1|P|2.5.1';

describe('parseEr7', () => {
  it('accepts CR, LF, CRLF, a BOM and trailing spaces', () => {
    for (const sep of ['\r', '\n', '\r\n']) {
      const m = parseEr7(`\uFEFF${MSH}  ${sep}PID|1||42^^^H^MR ${sep}${sep}`);
      expect(m.segments.map((s) => s.name)).toEqual(['MSH', 'PID']);
      expect(value(m.segments[0], 10, m.delimiters)).toBe('CTRL1');
      expect(value(m.segments[1], 3, m.delimiters, 5)).toBe('MR');
    }
  });

  it('numbers MSH fields as the standard does', () => {
    const m = parseEr7(MSH);
    expect(rawField(m.segments[0], 1)).toBe('|');
    expect(rawField(m.segments[0], 2)).toBe('^~\\&');
    expect(value(m.segments[0], 9, m.delimiters, 2)).toBe('A08');
  });

  it('reads repetitions, components, subcomponents and escapes', () => {
    const m = parseEr7(
      `${MSH}\rPID|1||A\\F\\B^^^X&1.2&ISO^MR~C\\S\\D\\T\\\\E\\\\R\\F^^^^SS|\\X41\\b`,
    );
    const d = m.delimiters;
    const reps = repetitions(rawField(m.segments[1], 3), d);
    expect(reps).toHaveLength(2);
    expect(component(reps[0] ?? '', 1, d)).toBe('A|B');
    expect(component(reps[0] ?? '', 4, d, 2)).toBe('1.2');
    expect(component(reps[1] ?? '', 1, d)).toBe('C^D&\\~F');
    expect(value(m.segments[1], 4, d)).toBe('Ab');
  });

  it('uses the delimiters the MSH declares', () => {
    const m = parseEr7('MSH#*!/%#A#B#C#D#2026##ADT*A08#X9#P#2.5\rPID#1##7*+*+*H*MR');
    expect(value(m.segments[0], 9, m.delimiters, 2)).toBe('A08');
    expect(value(m.segments[1], 3, m.delimiters, 5)).toBe('MR');
  });

  it('refuses what it cannot read, without quoting it', () => {
    expect(() => parseEr7('')).toThrow(Er7ParseError);
    expect(() => parseEr7('PID|1')).toThrow(/readable MSH/);
    expect(() => parseEr7('MSH|^^^^')).toThrow(Er7ParseError);
    const err = (() => {
      try {
        parseEr7(`${MSH}\rsecret-name|x`);
      } catch (e) {
        return e as Er7ParseError;
      }
      return undefined;
    })();
    expect(err?.message).toBe('segment 2 cannot be read');
    expect(err?.mshReadable).toBe(true);
  });
});

describe('hl7DateToIso', () => {
  it('converts DT/DTM', () => {
    expect(hl7DateToIso('19880818')).toBe('1988-08-18');
    expect(hl7DateToIso('2014')).toBe('2014');
    expect(hl7DateToIso('20141006083000+0700')).toBe('2014-10-06T08:30:00+07:00');
    expect(hl7DateToIso('201413')).toBeUndefined();
    expect(hl7DateToIso('soon')).toBeUndefined();
  });
});

describe('buildAck', () => {
  it('swaps sender and receiver, echoes MSH-10, explains errors', () => {
    const ack = buildAck(parseEr7(MSH), 'AE', {
      code: '101',
      text: 'PID-3 a|b',
      location: 'PID^1^3',
    });
    const [msh, msa, err] = ack.split('\r');
    expect(msh?.split('|').slice(2, 6)).toEqual(['RECV', 'RFAC', 'SEND', 'FAC']);
    expect(msh?.split('|')[8]).toBe('ACK^A08^ACK');
    expect(msa).toBe('MSA|AE|CTRL1|PID-3 a\\F\\b');
    expect(err?.split('|')[3]).toBe('101^Required field missing^HL70357');
    expect(ack.endsWith('\r')).toBe(true);
  });
});

describe('\\Xhh\\ escapes', () => {
  const d = { field: '|', component: '^', repetition: '~', escape: '\\', subcomponent: '&' };
  it('read in the message character set, never as U+FFFD', () => {
    expect(unescapeValue('M\\XDC\\LLER1', { ...d, hexEncoding: 'iso-8859-1' })).toBe('MÜLLER1');
    expect(unescapeValue('M\\XDD\\LLER1', { ...d, hexEncoding: 'iso-8859-1' })).toBe('MÝLLER1');
    expect(unescapeValue('M\\XC39C\\LLER1', d)).toBe('MÜLLER1');
    // Not UTF-8: kept as written, so that \XDC\ and \XDD\ still differ.
    expect(unescapeValue('M\\XDC\\LLER1', d)).toBe('M\\XDC\\LLER1');
    expect(unescapeValue('M\\XDD\\LLER1', d)).toBe('M\\XDD\\LLER1');
  });
});
