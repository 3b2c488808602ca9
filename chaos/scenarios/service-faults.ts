import { setTimeout as sleep } from 'node:timers/promises';
import { burstScenario, type ScenarioContext, type ScenarioOutcome } from '../support/scenario.ts';

/**
 * The local service misbehaves through its fault profile while traffic flows: 5xx, 429 with
 * Retry-After, hung requests, wrong-shape and unreadable bodies, lost, failed and never-finishing
 * jobs. The profile is cleared when the traffic ends; recovery is measured from then.
 */
export const SERVICE_FAULT_PROFILE = {
  routes: {
    'POST /v1/concordance': {
      error_rate: 0.15,
      error_status: 503,
      rate_limit_rate: 0.1,
      retry_after_s: 1,
      hang_rate: 0.03,
      malformed_rate: 0.03,
      malformed_body: 'wrong_shape',
    },
    'GET /v1/concordance/:job_id': {
      error_rate: 0.1,
      error_status: 500,
      rate_limit_rate: 0.05,
      retry_after_s: 1,
      hang_rate: 0.02,
      malformed_rate: 0.03,
      malformed_body: 'invalid_json',
    },
  },
  job_loss_rate: 0.05,
  job_failure_rate: 0.05,
  never_finish_rate: 0.02,
};

export function serviceFaults(ctx: ScenarioContext): Promise<ScenarioOutcome> {
  const plan = {
    feeds: ['json', 'hl7', 'fhir'] as const,
    patientsPerFeed: ctx.quick ? 5 : 15,
    bursts: ctx.quick ? 8 : 20,
    intervalMs: ctx.quick ? 1_500 : 2_000,
  };
  return burstScenario(ctx, {
    name: 'service-faults',
    plan,
    outageMs: 0,
    // never_finish jobs end at the poll deadline (30 s in the chaos configuration).
    quietMs: 40_000,
    settings: { fault_profile: SERVICE_FAULT_PROFILE },
    async inject(stack, say) {
      const start = Date.now();
      await stack.setFaults(SERVICE_FAULT_PROFILE);
      say('fault profile on');
      await sleep(plan.bursts * plan.intervalMs);
      await stack.setFaults({});
      say('fault profile cleared');
      return [{ what: 'service fault profile', start, end: Date.now() }];
    },
  });
}
