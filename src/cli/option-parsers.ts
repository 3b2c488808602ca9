import { InvalidArgumentError } from 'commander';

/** A commander parser of a whole number from `min` (to `max`); anything else is a usage error. */
export function wholeNumber(min: number, max?: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > (max ?? Number.MAX_SAFE_INTEGER)) {
      throw new InvalidArgumentError(
        max === undefined
          ? `expected a whole number >= ${min}`
          : `expected a whole number from ${min} to ${max}`,
      );
    }
    return Number(raw);
  };
}
