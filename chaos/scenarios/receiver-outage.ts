import { setTimeout as sleep } from 'node:timers/promises';
import { burstScenario, type ScenarioContext, type ScenarioOutcome } from '../support/scenario.ts';

/**
 * The hospital's webhook receiver is down (answers 503 to everything) for a while during traffic.
 * Every event must still arrive once; `time_to_recover_ms.delivery` is how long after the receiver
 * came back the first event arrived.
 */
export function receiverOutage(ctx: ScenarioContext): Promise<ScenarioOutcome> {
  const outageMs = ctx.quick ? 5_000 : 30_000;
  const plan = {
    feeds: ['json', 'hl7', 'fhir'] as const,
    patientsPerFeed: ctx.quick ? 4 : 10,
    bursts: ctx.quick ? 6 : 16,
    intervalMs: ctx.quick ? 1_500 : 3_000,
  };
  return burstScenario(ctx, {
    name: 'receiver-outage',
    plan,
    outageMs: 0,
    // The webhook backoff (5 s doubling) decides when deliveries resume: wait past it.
    quietMs: Math.max(20_000, outageMs * 1.5 + 10_000),
    settings: { outage_ms: outageMs, receiver_during_outage: '503 to every request' },
    async inject(stack, say) {
      await sleep(plan.intervalMs * 1.5);
      const start = Date.now();
      stack.receiverDown.value = true;
      say(`receiver down for ${outageMs / 1000} s`);
      await sleep(outageMs);
      stack.receiverDown.value = false;
      say('receiver back');
      return [{ what: 'webhook receiver 503', start, end: Date.now() }];
    },
  });
}
