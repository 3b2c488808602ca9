import { describe, expect, it } from 'vitest';
import { PerClientThrottle } from './per-client-throttle.ts';

/** A clock the test moves by hand. */
function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('PerClientThrottle', () => {
  it('admits one line per client per window, and says how many it held back', () => {
    const time = clock();
    const throttle = new PerClientThrottle({ windowMs: 60_000, now: time.now });
    expect(throttle.admit('10.0.0.1')).toEqual({ suppressed: 0 });
    expect(throttle.admit('10.0.0.1')).toBeUndefined();
    expect(throttle.admit('10.0.0.1')).toBeUndefined();
    // Another client is not held back by the first.
    expect(throttle.admit('10.0.0.2')).toEqual({ suppressed: 0 });
    time.advance(59_999);
    expect(throttle.admit('10.0.0.1')).toBeUndefined();
    time.advance(1);
    expect(throttle.admit('10.0.0.1')).toEqual({ suppressed: 3 });
    expect(throttle.admit('10.0.0.1')).toBeUndefined();
  });

  it('forgets quiet clients whose window is over', () => {
    const time = clock();
    const throttle = new PerClientThrottle({ windowMs: 1_000, now: time.now });
    for (let i = 0; i < 100; i++) throttle.admit(`10.0.1.${i}`);
    expect(throttle.size).toBe(100);
    time.advance(1_000);
    throttle.admit('10.0.2.1');
    expect(throttle.size).toBe(1);
  });

  it('remembers at most maxClients, dropping the oldest first', () => {
    const time = clock();
    const throttle = new PerClientThrottle({ windowMs: 60_000, maxClients: 3, now: time.now });
    for (const client of ['a', 'b', 'c', 'd']) throttle.admit(client);
    expect(throttle.size).toBe(3);
    // 'a' was forgotten: its next line is admitted at once; 'd' is still held back.
    expect(throttle.admit('a')).toEqual({ suppressed: 0 });
    expect(throttle.admit('d')).toBeUndefined();
  });
});
