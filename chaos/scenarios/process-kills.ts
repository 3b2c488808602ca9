import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultWindow } from '../support/figures.ts';
import { burstScenario, type ScenarioContext, type ScenarioOutcome } from '../support/scenario.ts';

/**
 * kill -9 of one pipeline process (`work` or `ingest`) several times while bursts of updates flow;
 * after each kill the process is started again at once on the same ports (as a supervisor would).
 * Each window runs from the kill to the restarted process being ready.
 */
export function processKills(which: 'worker' | 'ingest') {
  return (ctx: ScenarioContext): Promise<ScenarioOutcome> => {
    const kills = ctx.quick ? 3 : 8;
    const plan = {
      feeds: ['json', 'hl7', 'fhir'] as const,
      patientsPerFeed: ctx.quick ? 5 : 15,
      bursts: ctx.quick ? 8 : 24,
      intervalMs: ctx.quick ? 1_500 : 2_000,
    };
    const trafficMs = plan.bursts * plan.intervalMs;
    return burstScenario(ctx, {
      name: `${which}-kill`,
      plan,
      outageMs: 10_000,
      quietMs: 20_000,
      settings: { kills, restart: 'immediately after the exit, same ports' },
      async inject(stack, say) {
        const faults: FaultWindow[] = [];
        const t0 = Date.now();
        for (let k = 0; k < kills; k++) {
          // Kills spread over the traffic, off the burst boundaries so that they land mid-burst.
          const at = t0 + ((k + 0.5) * trafficMs) / kills + plan.intervalMs * 0.1;
          const wait = at - Date.now();
          if (wait > 0) await sleep(wait);
          const target = which === 'worker' ? stack.worker : stack.ingest;
          const start = Date.now();
          await target.kill('SIGKILL');
          say(`kill -9 ${which} #${k + 1}`);
          await target.start();
          faults.push({ what: `${which} kill -9 #${k + 1}`, start, end: Date.now() });
        }
        return faults;
      },
    });
  };
}
