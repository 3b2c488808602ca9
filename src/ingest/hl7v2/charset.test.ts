import { describe, expect, it } from 'vitest';
import { decodeMessage, encodingOf, msh18Of } from './charset.ts';

const msh = (charset: string) =>
  `MSH|^~\\&|A|B|C|D|20260101||ADT^A08|X1|P|2.5||||||${charset}\rPID|1||`;

describe('charset', () => {
  it('maps HL7 table 0211 and the usual aliases', () => {
    expect(encodingOf('8859/1')).toBe('iso-8859-1');
    expect(encodingOf(' 8859/15 ')).toBe('iso-8859-15');
    expect(encodingOf('UNICODE UTF-8')).toBe('utf-8');
    expect(encodingOf('ASCII')).toBe('us-ascii');
    expect(encodingOf('windows-1252')).toBe('windows-1252');
    expect(encodingOf('CP1250')).toBe('windows-1250');
    expect(encodingOf('ISO-8859-2')).toBe('iso-8859-2');
    expect(encodingOf('utf8')).toBe('utf-8');
    expect(encodingOf('UNICODE UTF-16')).toBeUndefined();
    expect(encodingOf('EBCDIC')).toBeUndefined();
    expect(encodingOf('')).toBeUndefined();
  });

  it('reads MSH-18 from the raw bytes, after a BOM and with other delimiters', () => {
    expect(msh18Of(Buffer.from(msh('8859/1'), 'latin1'))).toBe('8859/1');
    expect(msh18Of(Buffer.from(`\uFEFF${msh('UNICODE UTF-8~8859/1')}`, 'utf8'))).toBe(
      'UNICODE UTF-8',
    );
    expect(msh18Of(Buffer.from('MSH#^~\\&#A#B#C#D#1##ADT^A08#X#P#2.5######8859/2\r'))).toBe(
      '8859/2',
    );
    expect(msh18Of(Buffer.from('FHS|^~\\&\rMSH|^~\\&|A'))).toBe('');
  });

  it('decodes Latin-1 letters to distinct characters', () => {
    const a = decodeMessage(Buffer.from(`${msh('8859/1')}M\xDCLLER1`, 'latin1'), 'UNICODE UTF-8');
    const b = decodeMessage(Buffer.from(`${msh('8859/1')}M\xDDLLER1`, 'latin1'), 'UNICODE UTF-8');
    expect(a.ok && a.text.endsWith('MÜLLER1')).toBe(true);
    expect(b.ok && b.text.endsWith('MÝLLER1')).toBe(true);
  });

  it('refuses bytes that are not valid in the declared or default character set', () => {
    const latin1Bytes = Buffer.from(`${msh('')}M\xDCLLER1`, 'latin1');
    expect(decodeMessage(latin1Bytes, 'UNICODE UTF-8')).toMatchObject({
      ok: false,
      reason: 'undecodable',
    });
    expect(decodeMessage(latin1Bytes, '8859/1')).toMatchObject({ ok: true });
    expect(
      decodeMessage(Buffer.from(`${msh('ASCII')}M\xDCLLER1`, 'latin1'), '8859/1'),
    ).toMatchObject({ ok: false, reason: 'undecodable' });
    expect(
      decodeMessage(Buffer.from(`${msh('windows-1252')}\x81`, 'latin1'), '8859/1'),
    ).toMatchObject({ ok: false, reason: 'undecodable' });
    expect(decodeMessage(Buffer.from(msh('UNICODE UTF-16')), 'ASCII')).toMatchObject({
      ok: false,
      reason: 'unsupported',
    });
  });

  it('lets a transport charset win over MSH-18', () => {
    const utf8 = Buffer.from(`${msh('8859/1')}MÜLLER1`, 'utf8');
    const r = decodeMessage(utf8, 'ASCII', 'UTF-8');
    expect(r.ok && r.text.endsWith('MÜLLER1')).toBe(true);
  });
});
