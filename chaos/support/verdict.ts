import type { Figures } from './figures.ts';
import type { Check, ScenarioOutcome } from './scenario.ts';

/** One scenario as the JSON document reports it. */
export interface ScenarioReport {
  name: string;
  description: string;
  /** 0 lost, 0 unacknowledged, 0 rejected, every check held, and the scenario ran to its end. */
  pass: boolean;
  /** Why it did not pass (empty when it did). */
  reasons: string[];
  /** The open issue point the scenario's failure is attributed to (from the scenario table). */
  known_defect: string | null;
  /**
   * Whether this result sets the exit code: always for a pass or in a full run; in `--quick`, a
   * failing scenario with a `known_defect` mark does not (unless it could not run at all).
   */
  counts_as_failure: boolean;
  figures: Figures | null;
  checks: Check[];
  details: Record<string, unknown>;
  /** Set when the scenario could not run to its end (a process did not start, …). */
  error?: string;
}

/** Applies the pass rule to a scenario's outcome (or to the error that ended it). */
export function verdictOf(
  scenario: { name: string; description: string; known_defect?: string },
  outcome: ScenarioOutcome | Error,
  quick: boolean,
): ScenarioReport {
  const reasons: string[] = [];
  let figures: Figures | null = null;
  let checks: Check[] = [];
  let details: Record<string, unknown> = {};
  let error: string | undefined;
  if (outcome instanceof Error) {
    error = outcome.message;
    reasons.push(`did not run to its end: ${outcome.message.split('\n')[0]}`);
  } else {
    ({ figures, checks, details } = outcome);
    if (figures.lost > 0) reasons.push(`${figures.lost} acknowledged updates lost`);
    if (figures.unacknowledged > 0)
      reasons.push(`${figures.unacknowledged} updates never acknowledged`);
    if (figures.rejected > 0) reasons.push(`${figures.rejected} valid updates refused`);
    if (figures.unverified_deliveries > 0)
      reasons.push(`${figures.unverified_deliveries} deliveries with a bad signature`);
    for (const check of checks) if (!check.ok) reasons.push(`check failed: ${check.name}`);
  }
  const pass = reasons.length === 0;
  const knownDefect = scenario.known_defect ?? null;
  return {
    name: scenario.name,
    description: scenario.description,
    pass,
    reasons,
    known_defect: knownDefect,
    // A scenario that could not run says nothing about the defect it is marked with.
    counts_as_failure: !pass && !(quick && knownDefect !== null && error === undefined),
    figures,
    checks,
    details,
    ...(error === undefined ? {} : { error }),
  };
}
