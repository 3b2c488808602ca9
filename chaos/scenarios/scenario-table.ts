import type { ScenarioContext, ScenarioOutcome } from '../support/scenario.ts';
import { baseline } from './baseline.ts';
import { fuzz } from './fuzz.ts';
import { processKills } from './process-kills.ts';
import { receiverOutage } from './receiver-outage.ts';
import { redisOutage } from './redis-outage.ts';
import { serviceFaults } from './service-faults.ts';

/** One row of the scenario table. */
export interface ScenarioEntry {
  name: string;
  description: string;
  /**
   * The issue point whose defect this scenario still shows. Only in `--quick` (what CI runs) does
   * a failing scenario with this mark leave the exit code at 0; the JSON says so. Remove the mark
   * once the fix is merged.
   */
  known_defect?: string;
  run(ctx: ScenarioContext): Promise<ScenarioOutcome>;
}

export const SCENARIOS: readonly ScenarioEntry[] = [
  {
    name: 'baseline',
    description: 'the same bursts of JSON, HL7 v2 (MLLP) and FHIR updates with no fault',
    run: baseline,
  },
  {
    name: 'worker-kill',
    description: 'kill -9 of the `work` process several times during bursts, restarted at once',
    run: processKills('worker'),
  },
  {
    name: 'ingest-kill',
    description:
      'kill -9 of the `ingest` process several times during bursts; the sender resends what was not acknowledged',
    run: processKills('ingest'),
  },
  {
    name: 'redis-refused',
    description: 'Redis refuses connections (proxy closed, connections reset) during bursts',
    run: redisOutage('refused'),
  },
  {
    name: 'redis-blips',
    description:
      'Redis refuses connections for 300 ms many times during bursts (a fault between two ingest steps)',
    run: redisOutage('blips'),
  },
  {
    name: 'redis-hung',
    description: 'Redis accepts connections but answers nothing (proxy black hole) during bursts',
    run: redisOutage('hung'),
  },
  {
    name: 'service-faults',
    description:
      'the service answers 5xx, 429 with Retry-After, hangs, wrong-shape and unreadable bodies, loses, fails and never finishes jobs',
    run: serviceFaults,
  },
  {
    name: 'receiver-outage',
    description: 'the webhook receiver answers 503 to everything for a while during bursts',
    run: receiverOutage,
  },
  {
    name: 'fuzz',
    description:
      'malformed JSON and FHIR bodies, MLLP garbage and oversize frames: nothing changes, the ingester survives and still accepts valid updates',
    run: fuzz,
  },
];
