/**
 * Seeded pseudo-random numbers. Everything the simulator varies (graph, job durations, faults,
 * ids) comes from streams derived from the seed, so two instances with the same seed behave alike.
 * `Math.random` is never used.
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An unsigned 32-bit integer. */
  uint32(): number;
  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
}

/** FNV-1a: a cheap, stable 32-bit hash of a string. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
    z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
    return (z ^ (z >>> 15)) >>> 0;
  };
}

/**
 * A stream named by its parts, e.g. `seededRandom(seed, 'faults')`: distinct names give
 * independent streams, so drawing more from one never shifts another. (sfc32 generator.)
 */
export function seededRandom(...parts: readonly (string | number)[]): Random {
  const init = splitmix32(hash32(parts.join('\u0000')));
  let a = init();
  let b = init();
  let c = init();
  let d = init();
  const uint32 = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  // Warm up: the first outputs of sfc32 are correlated with the seed words.
  for (let i = 0; i < 12; i++) uint32();
  const next = () => uint32() / 0x1_0000_0000;
  return {
    next,
    uint32,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => p > 0 && next() < p,
    pick<T>(items: readonly T[]): T {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new RangeError('pick from an empty list');
      return item;
    },
  };
}

/** A UUID-shaped (version 4 layout) id drawn from `random`: looks random, is reproducible. */
export function uuidFrom(random: Random): string {
  const hex = Array.from({ length: 4 }, () => random.uint32().toString(16).padStart(8, '0')).join(
    '',
  );
  const variant = ((parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
