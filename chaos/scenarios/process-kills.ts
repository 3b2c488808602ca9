import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultWindow } from '../support/figures.ts';
import { burstScenario, type ScenarioContext, type ScenarioOutcome } from '../support/scenario.ts';

/**
 * kill -9 of one pipeline process (`work` or `ingest`) several times while bursts of updates flow;
 * after each kill the process is started again at once on the same ports (as a supervisor would).
 * Each window runs from the kill to the restarted process being ready; the next kill comes at the
 * earliest `minAliveMs` after that (a process killed again before it could work shows nothing), and
 * only while bursts are still due.
 */
export function processKills(which: 'worker' | 'ingest') {
  return (ctx: ScenarioContext): Promise<ScenarioOutcome> => {
    const kills = ctx.quick ? 3 : 8;
    // Longer than a lease (5 s), so that a killed worker's queries come back between kills.
    const minAliveMs = 8_000;
    const plan = {
      feeds: ['json', 'hl7', 'fhir'] as const,
      patientsPerFeed: ctx.quick ? 5 : 15,
      bursts: ctx.quick ? 16 : 45,
      intervalMs: ctx.quick ? 1_500 : 2_000,
    };
    const trafficMs = plan.bursts * plan.intervalMs;
    return burstScenario(ctx, {
      name: `${which}-kill`,
      plan,
      outageMs: 10_000,
      quietMs: 20_000,
      settings: {
        kills_planned: kills,
        min_alive_between_kills_ms: minAliveMs,
        restart: 'immediately after the exit, same ports',
      },
      async inject(stack, say, trafficEnd) {
        const faults: FaultWindow[] = [];
        const t0 = Date.now();
        let readyAt = t0;
        for (let k = 0; k < kills; k++) {
          // Kills spread over the traffic, off the burst boundaries so that they land mid-burst.
          const planned = t0 + (k * trafficMs) / kills + plan.intervalMs * 1.1;
          const at = Math.max(planned, readyAt + minAliveMs);
          if (at > trafficEnd) break;
          const wait = at - Date.now();
          if (wait > 0) await sleep(wait);
          const target = which === 'worker' ? stack.worker : stack.ingest;
          const start = Date.now();
          await target.kill('SIGKILL');
          say(`kill -9 ${which} #${k + 1}`);
          await target.start();
          readyAt = Date.now();
          faults.push({ what: `${which} kill -9 #${k + 1}`, start, end: Date.now() });
        }
        return faults;
      },
    });
  };
}
