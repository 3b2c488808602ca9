import type { ResultEvent, QueryOutcome } from '../interface/result-event.ts';
import type { Logger } from 'pino';
import { isPreventPreset } from '../ccsr/preset-names.ts';
import { queryJobId } from './query-job.ts';
import type { Triggers } from './query-outbox.ts';
import type { EndDecision, ForgetDecision } from './query-lifecycle.ts';

/**
 * What a worker knows of a query when it ends (on the submission side or the poll side): read
 * from its per-key state, never from a queue job; what its result event and its end's log line
 * are made of.
 */
export interface QueryRecord {
  /** Random per logical query: the id of its result event. */
  queryId: string;
  patientServiceId: string;
  ccsrCategory: string;
  /** The query's sequence number within its key (see QueryState). */
  seq: number;
  triggers?: Triggers;
  recordVersion?: number;
  remoteJobId?: string;
  submittedAt?: number;
  polls: number;
  resubmits: number;
}

/** Why a query ended without a concordance. */
export interface QueryFailure {
  code: string;
  message: string;
  /** The service's validation items, reduced to `loc`, `msg` and `type`. */
  items?: { loc: (string | number)[]; msg: string; type: string }[];
}

/** Everything a result event needs besides the query's own data. */
export interface OutcomeDetails {
  outcome: QueryOutcome;
  patientId: string | null;
  concordance?: Record<string, unknown> | null;
  /** A Prevent run's recommendations. */
  recommendations?: Record<string, unknown>;
  failure?: QueryFailure;
  now?: Date;
}

/**
 * The result event of a query that has ended: `concordance.*`, or `prevent.*` for the reserved
 * preset `prevent` (with the recommendations under `prevent`).
 */
export function resultEvent(data: QueryRecord, details: OutcomeDetails): ResultEvent {
  const triggers = data.triggers;
  const prevent = isPreventPreset(data.ccsrCategory);
  const kind = prevent ? 'prevent' : 'concordance';
  return {
    id: data.queryId,
    type: `${kind}.${details.outcome === 'completed' ? 'completed' : 'failed'}`,
    created_at: (details.now ?? new Date()).toISOString(),
    patient_id: details.patientId,
    patient_service_id: data.patientServiceId,
    ccsr_category: data.ccsrCategory,
    record_version: data.recordVersion ?? null,
    triggered_by: {
      event_ids: triggers?.eventIds ?? [],
      count: triggers?.count ?? 0,
      first_update_at: triggers?.firstAt ?? null,
      last_update_at: triggers?.lastAt ?? null,
    },
    remote_job_id: data.remoteJobId ?? null,
    status: details.outcome,
    concordance: details.concordance ?? null,
    error: details.failure ?? null,
    ...(prevent ? { prevent: details.recommendations ?? null } : {}),
  };
}

/**
 * True for an ending the service's trouble caused (it could not be reached, timed out, failed,
 * answered what the worker cannot read): not a record it refused (`ERR_SERVICE_VALIDATION`).
 */
export function endedOnServiceTrouble(code: string | undefined): boolean {
  return code !== undefined && code.startsWith('ERR_SERVICE_') && code !== 'ERR_SERVICE_VALIDATION';
}

/**
 * The one line of a query that ended (or was superseded): info, when the level lets it through;
 * warn, naming the service's `host[:port]` (`service_host`), when the service's trouble ended it
 * (see {@link endedOnServiceTrouble}), so that a query lost to a wrong or failing service is
 * never silent.
 */
export function logQueryEnd(
  logger: Logger,
  data: QueryRecord,
  decision: EndDecision | ForgetDecision,
  execMs: number,
  serviceHost?: string,
): void {
  const code = decision.kind === 'end' ? decision.failure?.code : undefined;
  const trouble = endedOnServiceTrouble(code);
  if (!trouble && !logger.isLevelEnabled('info')) return;
  (trouble ? logger.warn : logger.info).call(
    logger,
    {
      query_key: `${data.patientServiceId}/${data.ccsrCategory}`,
      // The id ingest answered with for this query (its `job_id`).
      job_id: queryJobId(data.patientServiceId, data.ccsrCategory, data.seq),
      query_id: data.queryId,
      remote_job_id: data.remoteJobId,
      record_version: data.recordVersion,
      outcome: decision.kind === 'end' ? decision.outcome : 'superseded',
      error_code: code,
      ...(trouble ? { service_host: serviceHost ?? null } : {}),
      exec_ms: execMs,
    },
    decision.kind === 'end' ? 'query finished' : 'query superseded by a newer one',
  );
}
