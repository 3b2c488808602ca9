import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { App } from '../../src/app/compose-app.ts';
import { loadCcsrTables } from '../../src/ccsr/ccsr-tables.ts';
import type { Config } from '../../src/config/config-schema.ts';
import type { ResultEvent } from '../../src/interface/result-event.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { workerConnection } from '../../src/queues/redis-connections.ts';
import type { Verdict } from '../../src/simulator/concordance/concordance-outline.ts';
import { renderConcordance } from '../../src/simulator/concordance/render-concordance.ts';
import { forEachLimit, type BenchContext } from './fixtures.ts';

/** The problem-list categories a bench patient's results are drawn from (CCSR v2023.1). */
export const CDS_CATEGORIES = ['END002', 'CIR007', 'END010', 'CIR019', 'RSP009', 'MBD002'] as const;

/** What was kept: per patient, the ids of its results (= the uuids of its cards). */
export interface KeptSeed {
  /** Patient `i`'s result ids, one per category kept. */
  cardIds: Set<string>[];
  results: number;
  seconds: number;
}

const VERDICTS: readonly Verdict[] = ['concordant', 'discordant', 'insufficient_data'];

/** Patient `i`'s categories: 2 to 4 of {@link CDS_CATEGORIES}, starting at a patient-dependent one. */
export function categoriesOf(i: number): string[] {
  const count = 2 + (i % 3);
  return Array.from(
    { length: count },
    (_, k) => CDS_CATEGORIES[(i + k) % CDS_CATEGORIES.length] as string,
  );
}

/**
 * A completed concordance result as the delivery router hands it to its keeper: the simulator's
 * own concordance object (what the local Clinical Graph Service answers), verdicts varied per
 * patient and category so that the cards' indicators vary.
 */
function resultEvent(
  tables: ReturnType<typeof loadCcsrTables>,
  patientServiceId: string,
  mrn: string,
  category: string,
  i: number,
  k: number,
): ResultEvent {
  const count = 2 + ((i + k) % 2);
  const concordance = renderConcordance(
    {
      category,
      verdicts: Array.from({ length: count }, (_, r) => ({
        verdict: VERDICTS[(i * 7 + k * 3 + r) % VERDICTS.length] as Verdict,
        nodeIds: ['c1', 'o1'],
      })),
      flags: ['notable_nodes_cited'],
    },
    tables,
  );
  const at = new Date().toISOString();
  return {
    id: randomUUID(),
    type: 'concordance.completed',
    created_at: at,
    patient_id: mrn,
    patient_service_id: patientServiceId,
    ccsr_category: category,
    record_version: 1,
    triggered_by: {
      event_ids: [`bench-cds-${i}`],
      count: 1,
      first_update_at: at,
      last_update_at: at,
    },
    remote_job_id: `bench-job-${i}-${k}`,
    status: 'completed',
    concordance: { ...concordance },
    error: null,
    changed: true,
  };
}

/**
 * Writes the kept results of `mrns.length` patients into the bench's Redis, through the project's
 * own composition root with the child's configuration (same prefix, same CROSSWALK_KEY): each
 * patient's crosswalk entry (as ingest makes it), then its results through `KeptResults.keep`, the
 * delivery router's keeper, in batches of one patient's events as a delivery hands them over.
 */
export async function seedKeptResults(
  ctx: BenchContext,
  config: Config,
  mrns: readonly string[],
): Promise<KeptSeed> {
  const started = performance.now();
  const redis = workerConnection(ctx.redis.url, 'cw-bench-cds');
  try {
    const app = App.compose(config, createLogger({ level: 'warn', name: 'bench' }), { redis });
    const kept = app.keptResults();
    const tables = loadCcsrTables();
    const cardIds = mrns.map(() => new Set<string>());
    let results = 0;
    await forEachLimit(mrns, 64, async (mrn, i) => {
      const { patientServiceId } = await app.crosswalk.resolve(mrn);
      const events = categoriesOf(i).map((category, k) =>
        resultEvent(tables, patientServiceId, mrn, category, i, k),
      );
      await kept.keep(events);
      for (const event of events) cardIds[i]?.add(event.id);
      results += events.length;
    });
    return { cardIds, results, seconds: (performance.now() - started) / 1_000 };
  } finally {
    redis.disconnect();
  }
}
