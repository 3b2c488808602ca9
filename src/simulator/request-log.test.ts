import { describe, expect, it } from 'vitest';
import { RequestLog, type RecordedRequest } from './request-log.ts';

const entry = (n: number): RecordedRequest => ({
  method: 'GET',
  path: `/r/${n}`,
  status: 200,
  headers: {},
  bodyJson: null,
  received_at: n,
  answered_at: n + 1,
});

describe('RequestLog', () => {
  it('keeps the last `capacity` entries, oldest first', () => {
    const log = new RequestLog(3);
    for (let i = 1; i <= 5; i++) log.push(entry(i));
    expect(log.size).toBe(3);
    expect(log.entries().map((e) => e.path)).toEqual(['/r/3', '/r/4', '/r/5']);
  });

  it('lists fewer entries than capacity in order', () => {
    const log = new RequestLog(4);
    log.push(entry(1));
    log.push(entry(2));
    expect(log.entries().map((e) => e.path)).toEqual(['/r/1', '/r/2']);
  });

  it('gives the body back parsed', () => {
    const log = new RequestLog(2);
    log.push({ ...entry(1), bodyJson: '{"a":[1,{"b":null}]}' });
    log.push(entry(2));
    expect(log.entries().map((e) => e.body)).toEqual([{ a: [1, { b: null }] }, null]);
  });

  it('clears', () => {
    const log = new RequestLog(2);
    log.push(entry(1));
    log.clear();
    expect(log.entries()).toEqual([]);
    log.push(entry(2));
    expect(log.entries().map((e) => e.path)).toEqual(['/r/2']);
  });

  it('keeps nothing with capacity 0 and rejects a negative one', () => {
    const log = new RequestLog(0);
    log.push(entry(1));
    expect(log.entries()).toEqual([]);
    expect(() => new RequestLog(-1)).toThrow(RangeError);
  });
});
