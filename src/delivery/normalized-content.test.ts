import { describe, expect, it } from 'vitest';
import { normalizedContent } from './normalized-content.ts';

describe('normalizedContent', () => {
  const ignore = ['generated_at', 'job_id'];

  it('sorts keys at every depth', () => {
    expect(normalizedContent({ b: 1, a: { d: [{ y: 1, x: 2 }], c: 3 } }, ignore)).toBe(
      normalizedContent({ a: { c: 3, d: [{ x: 2, y: 1 }] }, b: 1 }, ignore),
    );
  });

  it('drops ignored keys at any depth, and only those', () => {
    const a = {
      generated_at: 1,
      items: [{ job_id: 'a', v: 1 }],
      nested: { deep: { job_id: 'x' } },
    };
    const b = {
      generated_at: 2,
      items: [{ job_id: 'b', v: 1 }],
      nested: { deep: { job_id: 'y' } },
    };
    expect(normalizedContent(a, ignore)).toBe(normalizedContent(b, ignore));
    expect(normalizedContent({ ...a, items: [{ v: 2 }] }, ignore)).not.toBe(
      normalizedContent(a, ignore),
    );
  });

  it('keeps arrays in order', () => {
    expect(normalizedContent({ l: [1, 2] }, ignore)).not.toBe(
      normalizedContent({ l: [2, 1] }, ignore),
    );
  });

  it('tells null from an empty object and treats undefined members as absent', () => {
    expect(normalizedContent(null, ignore)).not.toBe(normalizedContent({}, ignore));
    expect(normalizedContent({ a: undefined }, ignore)).toBe(normalizedContent({}, ignore));
  });
});
