import type { KeptResult } from './kept-result.ts';

/** A card's urgency, as CDS Hooks orders it. */
export const INDICATORS = ['info', 'warning', 'critical'] as const;
export type Indicator = (typeof INDICATORS)[number];

/** What a result says of the record's concordance with the guidelines. */
export type Verdict = 'concordant' | 'discordant' | 'insufficient_data' | 'unknown';

export interface ReadVerdict {
  verdict: Verdict;
  indicator: Indicator;
  /** The recommendations' verdicts read, for the summary: how many of each. */
  tally: { concordant: number; discordant: number; insufficient_data: number; total: number };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const asIndicator = (value: unknown): Indicator | undefined =>
  INDICATORS.find((indicator) => indicator === value);

const asVerdict = (value: unknown): Exclude<Verdict, 'unknown'> | undefined =>
  value === 'concordant' || value === 'discordant' || value === 'insufficient_data'
    ? value
    : undefined;

/**
 * Reads the verdict and the card's indicator of a kept result. The interface leaves the result's
 * fields open; these are the fields read, in this order (docs/cds-hooks.md, "Indicator"):
 *
 * 1. `<result>.indicator`, when it is `info`, `warning` or `critical`: the service's own;
 * 2. `<result>.verdict` (`concordant`, `discordant`, `insufficient_data`): the overall verdict;
 * 3. `<result>.recommendations[].verdict`: discordant when any is, concordant when all are;
 * 4. `<result>.flags` holding `discordance_found`: discordant.
 *
 * `<result>` is the event's `concordance` object (Prevent: its `prevent` object). Discordant maps
 * to `warning`, anything else to `info`; `critical` comes only from the service's own indicator.
 * A result with none of these fields is `unknown` and `info` (the fallback).
 */
export function readVerdict(result: KeptResult): ReadVerdict {
  const body = (result.type === 'prevent.completed' ? result.prevent : result.concordance) ?? {};
  const recommendations = Array.isArray(body.recommendations) ? body.recommendations : [];
  const verdicts = recommendations
    .map((r) => (isObject(r) ? asVerdict(r.verdict) : undefined))
    .filter((v) => v !== undefined);
  const count = (v: Verdict) => verdicts.filter((x) => x === v).length;
  const tally = {
    concordant: count('concordant'),
    discordant: count('discordant'),
    insufficient_data: count('insufficient_data'),
    total: verdicts.length,
  };
  let verdict: Verdict = asVerdict(body.verdict) ?? 'unknown';
  if (verdict === 'unknown' && verdicts.length > 0) {
    if (tally.discordant > 0) verdict = 'discordant';
    else if (tally.concordant === verdicts.length) verdict = 'concordant';
    else verdict = 'insufficient_data';
  }
  if (
    verdict === 'unknown' &&
    Array.isArray(body.flags) &&
    body.flags.includes('discordance_found')
  ) {
    verdict = 'discordant';
  }
  const indicator = asIndicator(body.indicator) ?? (verdict === 'discordant' ? 'warning' : 'info');
  return { verdict, indicator, tally };
}
