import { burstScenario, type ScenarioContext, type ScenarioOutcome } from '../support/scenario.ts';

/** The same bursts with no fault: what every other scenario's figures compare against. */
export function baseline(ctx: ScenarioContext): Promise<ScenarioOutcome> {
  return burstScenario(ctx, {
    name: 'baseline',
    plan: {
      feeds: ['json', 'hl7', 'fhir'],
      patientsPerFeed: ctx.quick ? 5 : 15,
      bursts: ctx.quick ? 4 : 20,
      intervalMs: ctx.quick ? 1_500 : 2_000,
    },
    outageMs: 0,
    quietMs: 20_000,
    settings: { faults: 'none' },
    inject: async () => [],
  });
}
