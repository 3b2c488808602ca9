import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultWindow } from '../support/figures.ts';
import { burstScenario, type ScenarioContext, type ScenarioOutcome } from '../support/scenario.ts';

export type RedisFault = 'refused' | 'hung' | 'blips';

/**
 * Redis unreachable, through the TCP proxy between the pipeline and Redis: `refused` (listening
 * socket closed, open connections reset) or `hung` (connections accepted, nothing forwarded) for
 * one long window, or `blips`: many short refusals (300 ms) while updates flow, the fault most
 * likely to land between two steps of an ingest. Traffic flows before, during and after.
 */
export function redisOutage(mode: RedisFault) {
  return (ctx: ScenarioContext): Promise<ScenarioOutcome> => {
    // A hung window longer than the sender's 5 s attempt timeout, so that a hanging ingest shows.
    const outageMs =
      mode === 'blips' ? 300 : ctx.quick ? (mode === 'hung' ? 8_000 : 5_000) : 30_000;
    const blips = mode === 'blips' ? (ctx.quick ? 10 : 30) : 1;
    const plan = {
      feeds: ['json', 'hl7', 'fhir'] as const,
      patientsPerFeed: mode === 'blips' ? (ctx.quick ? 10 : 20) : ctx.quick ? 5 : 12,
      bursts: mode === 'blips' ? (ctx.quick ? 12 : 35) : ctx.quick ? 8 : 20,
      intervalMs: mode === 'blips' ? 1_000 : ctx.quick ? 1_500 : 3_000,
    };
    return burstScenario(ctx, {
      name: `redis-${mode}`,
      plan,
      outageMs: outageMs * blips,
      quietMs: 20_000,
      settings: {
        outage_ms: outageMs,
        outages: blips,
        proxy: mode === 'hung' ? 'black hole' : 'listening socket closed, connections reset',
      },
      async inject(stack, say, trafficEnd) {
        const faults: FaultWindow[] = [];
        await sleep(mode === 'blips' ? 500 : plan.intervalMs * 2.3);
        for (let b = 0; b < blips; b++) {
          if (b > 0) await sleep(plan.intervalMs * 0.77);
          if (mode === 'blips' && Date.now() + outageMs > trafficEnd) break;
          const start = Date.now();
          if (mode === 'hung') await stack.proxy.hang();
          else await stack.proxy.refuse();
          if (mode !== 'blips') say(`redis ${mode} for ${outageMs / 1000} s`);
          await sleep(outageMs);
          await stack.proxy.forward();
          faults.push({
            what: `redis ${mode === 'blips' ? 'refused' : mode}`,
            start,
            end: Date.now(),
          });
        }
        say(mode === 'blips' ? `${faults.length} refusals of ${outageMs} ms done` : 'redis back');
        return faults;
      },
      async inspect(stack, figures) {
        const timeouts = figures.answers.timeout ?? 0;
        return {
          checks: [
            {
              name: 'no send attempt hung for 5 s (an outage gives 503, AR or a closed connection at once)',
              ok: timeouts === 0,
              detail: { timeouts },
            },
            { name: 'ingest still running', ok: stack.ingest.proc.running },
            { name: 'worker still running', ok: stack.worker.proc.running },
          ],
        };
      },
    });
  };
}
