import { describe, expect, it } from 'vitest';
import { buildBatchAck, isBatch, splitBatch } from './batch.ts';

const msh = (id: string) => `MSH|^~\\&|A|B|C|D|20260101||ADT^A08|${id}|P|2.5`;

describe('HL7 v2 batches', () => {
  const file = [
    'FHS|^~\\&|LAB|HOSP|CW|HOSP2|20260101||||F1',
    'BHS|^~\\&|LAB|HOSP|CW|HOSP2|20260101||||B1',
    msh('M1'),
    'PID|1||1^^^^MR',
    msh('M2'),
    'PID|1||2^^^^MR',
    'BTS|2',
    'FTS|1',
  ].join('\r');

  it('recognizes FHS and BHS, not a message', () => {
    expect(isBatch(Buffer.from(file))).toBe(true);
    expect(isBatch(Buffer.from(`\uFEFFBHS|^~\\&\r${msh('M1')}`))).toBe(true);
    expect(isBatch(Buffer.from(`${msh('M1')}\rPID|1`))).toBe(false);
    expect(isBatch(Buffer.alloc(0))).toBe(false);
    expect(isBatch(Buffer.from('\r\n\rBHS|^~\\&'))).toBe(true);
    expect(isBatch(Buffer.from('BH|S'))).toBe(false);
  });

  it('cuts each message out as bytes, with its own segments', () => {
    const batch = splitBatch(Buffer.from(file.replaceAll('\r', '\r\n')));
    expect(batch.fhs).toMatch(/^FHS\|/);
    expect(batch.batches).toHaveLength(1);
    expect(batch.batches[0]?.bhs).toMatch(/\|B1$/);
    expect(batch.batches[0]?.messages.map((m) => m.toString())).toEqual([
      `${msh('M1')}\rPID|1||1^^^^MR\r`,
      `${msh('M2')}\rPID|1||2^^^^MR\r`,
    ]);
  });

  it('keeps several batches of a file apart and ignores stray segments in the envelope', () => {
    const batch = splitBatch(
      Buffer.from(
        [
          'FHS|^~\\&',
          'BHS|^~\\&',
          'ZZZ|x',
          msh('A'),
          'BTS|1',
          'BHS|^~\\&',
          msh('B'),
          msh('C'),
        ].join('\n'),
      ),
    );
    expect(batch.batches.map((b) => b.messages.length)).toEqual([1, 2]);
  });

  it('answers with the envelope mirrored, one ACK per message and the counts', () => {
    const batch = splitBatch(Buffer.from(file));
    const ack = buildBatchAck(batch, [['MSH|^~\\&|x\rMSA|AA|M1\r', 'MSH|^~\\&|x\rMSA|AE|M2\r']]);
    const lines = ack.split('\r');
    expect(lines.at(-1)).toBe('');
    const fhs = lines[0]?.split('|') ?? [];
    expect(fhs.slice(0, 6)).toEqual(['FHS', '^~\\&', 'CW', 'HOSP2', 'LAB', 'HOSP']);
    expect(fhs[11]).toBe('F1');
    expect(lines[1]?.split('|')[11]).toBe('B1');
    expect(lines.filter((l) => l.startsWith('MSA|'))).toEqual(['MSA|AA|M1', 'MSA|AE|M2']);
    expect(lines.slice(-3, -1)).toEqual(['BTS|2', 'FTS|1']);
  });

  it('answers a batch without FHS with BHS … BTS only', () => {
    const batch = splitBatch(Buffer.from(['BHS|^~\\&|A', msh('M1'), 'BTS|1'].join('\r')));
    const lines = buildBatchAck(batch, [['MSH|^~\\&|x\rMSA|AA|M1\r']]).split('\r');
    expect(lines[0]).toMatch(/^BHS\|/);
    expect(lines.some((l) => l.startsWith('FHS') || l.startsWith('FTS'))).toBe(false);
    expect(lines.at(-2)).toBe('BTS|1');
  });
});
