import { loadCcsrTables, type CcsrTables } from '../ccsr/ccsr-tables.ts';
import { FaultInjector } from './faults/fault-injector.ts';
import { JobStore } from './jobs/job-store.ts';
import { PatientRegistry } from './prevent/patient-registry.ts';
import {
  buildRelationshipGraph,
  type RelationshipGraph,
} from './relationships/relationship-graph.ts';
import { RequestLog } from './request-log.ts';
import { seededRandom, type Random } from './seeded-random.ts';
import type { ResolvedSimulatorOptions } from './simulator-options.ts';

/** Everything one simulator instance holds; the routes share it. */
export interface SimulatorState {
  readonly options: ResolvedSimulatorOptions;
  readonly tables: CcsrTables;
  readonly graph: RelationshipGraph;
  readonly jobs: JobStore;
  readonly patients: PatientRegistry;
  readonly faults: FaultInjector;
  readonly requestLog: RequestLog;
  /** Job ids, durations and outcomes: separate streams so faults do not shift ids. */
  readonly random: { jobIds: Random; jobDurations: Random; jobOutcomes: Random };
}

export function createSimulatorState(options: ResolvedSimulatorOptions): SimulatorState {
  const tables = loadCcsrTables();
  const { seed } = options;
  return {
    options,
    tables,
    graph: buildRelationshipGraph(seed, options.relationshipCount, tables),
    jobs: new JobStore({ now: options.now, ttlMs: options.jobTtlMs }),
    patients: new PatientRegistry(seed),
    faults: new FaultInjector(seed, options.faults),
    requestLog: new RequestLog(options.requestLogSize),
    random: {
      jobIds: seededRandom(seed, 'job-ids'),
      jobDurations: seededRandom(seed, 'job-durations'),
      jobOutcomes: seededRandom(seed, 'job-outcomes'),
    },
  };
}
