import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import type { CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { Crosswalk } from '../identity/crosswalk.ts';
import type { Logger } from '../observability/logger.ts';
import { basePrefix, type KeySpace } from '../queues/partitions.ts';
import { MessageTraceReader, type MessageTrace } from '../trace/message-trace-reader.ts';
import type { AuditAction } from './audit-entry.ts';
import { AuditLog } from './audit-log.ts';
import { PatientConsent } from './patient-consent.ts';
import type { PatientEraser } from './patient-eraser.ts';
import { PatientPurge } from './patient-purge.ts';
import { PatientQueryJobs } from './patient-query-jobs.ts';
import { PatientTraceEraser } from './patient-trace-eraser.ts';
import { auditPatientRef } from './patient-reference.ts';
import { UnknownPatientError } from './unknown-patient-error.ts';

/** Who asks, and the id that ties the audit entry to the answer. */
export interface AdminRequest {
  /** See `tokenActor` and `cliActor`. */
  actor: string;
  /** @defaultValue a random UUID */
  requestId?: string;
}

export interface PurgeReport {
  request_id: string;
  counts: Record<string, number>;
  kept: string[];
}

export interface OptOutReport {
  request_id: string;
  patient_service_id: string;
  opted_out: true;
  opted_out_at: string;
  /** Queries of the patient that had not started and never will. */
  queries_cancelled: number;
}

export interface OptInReport {
  request_id: string;
  patient_service_id: string;
  opted_out: false;
  /** False when no opt-out was in force (nothing changed). */
  was_opted_out: boolean;
}

/** A patient's message trace, read by its local id (audited). */
export interface PatientTraceReport {
  request_id: string;
  patient_service_id: string;
  /** Its messages, newest first, each with this patient's receipts only. */
  messages: MessageTrace[];
  /** Trace entries that could not be read (skipped). */
  skipped: number;
}

export interface PatientAdminOptions {
  redis: RedisClient;
  /** A prefix, or the partitions (the audit log is under the configured prefix). */
  prefix: KeySpace;
  keys: CrosswalkKeys;
  /**
   * The query queue, whose jobs of the patient are removed; with partitions, each partition's
   * (index = partition).
   */
  queue: Queue | readonly Queue[];
  /** Gets one `audit` line per action. */
  logger: Logger;
  /** @defaultValue 100000 (`admin.audit.max_entries`) */
  auditMaxEntries?: number;
  /** Other holders of patient data erased by a purge. @defaultValue none */
  erasers?: readonly PatientEraser[];
  /**
   * Holders of patient data erased by an opt-out too (the CDS Hooks service's kept results); each
   * count is in the audit entry under its name. @defaultValue none
   */
  optOutErasers?: readonly PatientEraser[];
}

/**
 * The administrative actions on one patient, named by the hospital's local id: purge, opt-out,
 * opt-in. Each writes one audit entry, whatever its outcome (an unknown patient included); the
 * entry names the patient only by its HMAC reference. The HTTP routes and the CLI both use this.
 */
export class PatientAdmin {
  readonly crosswalk: Crosswalk;
  readonly consent: PatientConsent;
  readonly audit: AuditLog;
  /** The message trace of every partition (docs/message-trace.md). */
  readonly traces: MessageTraceReader;
  readonly #keys: CrosswalkKeys;
  readonly #traceEraser: PatientTraceEraser;
  readonly #purge: PatientPurge;
  readonly #queryJobs: PatientQueryJobs;
  readonly #optOutErasers: readonly PatientEraser[];

  constructor(options: PatientAdminOptions) {
    const { redis, prefix, keys, queue, logger } = options;
    this.#keys = keys;
    this.#optOutErasers = options.optOutErasers ?? [];
    this.crosswalk = new Crosswalk({ redis, prefix, keys });
    this.consent = new PatientConsent({ redis, prefix });
    this.traces = new MessageTraceReader({ redis, space: prefix });
    this.#traceEraser = new PatientTraceEraser({ redis, prefix });
    this.audit = new AuditLog({
      redis,
      prefix: basePrefix(prefix),
      maxEntries: options.auditMaxEntries,
      logger,
    });
    this.#queryJobs = new PatientQueryJobs({
      redis,
      prefix,
      queues: Array.isArray(queue) ? queue : [queue as Queue],
    });
    this.#purge = new PatientPurge({
      redis,
      prefix,
      crosswalk: this.crosswalk,
      consent: this.consent,
      queryJobs: this.#queryJobs,
      erasers: options.erasers,
    });
  }

  async #record(
    action: AuditAction,
    localId: string,
    request: AdminRequest,
    outcome: 'done' | 'unknown_patient',
    counts: Record<string, number>,
  ): Promise<string> {
    const requestId = request.requestId ?? randomUUID();
    await this.audit.append({
      action,
      actor: request.actor,
      at: new Date().toISOString(),
      patient_ref: auditPatientRef(this.#keys, localId),
      outcome,
      counts,
      request_id: requestId,
    });
    return requestId;
  }

  /** See {@link PatientPurge}. Throws {@link UnknownPatientError} for a local id never seen. */
  async purge(localId: string, request: AdminRequest): Promise<PurgeReport> {
    const result = await this.#purge.purge(localId);
    if (result === undefined) {
      throw new UnknownPatientError(
        await this.#record('purge', localId, request, 'unknown_patient', {}),
      );
    }
    const requestId = await this.#record('purge', localId, request, 'done', result.counts);
    return { request_id: requestId, counts: result.counts, kept: result.kept };
  }

  /**
   * Opts the patient out and removes its queries that have not started. A local id never seen
   * gets its crosswalk entry now: a patient may object before the first update arrives.
   */
  async optOut(localId: string, request: AdminRequest): Promise<OptOutReport> {
    const { patientServiceId } = await this.crosswalk.resolve(localId);
    const { optedOutAt, created } = await this.consent.optOut(patientServiceId);
    const jobs = await this.#queryJobs.remove(patientServiceId, 'not_started');
    // Its message trace goes too (docs/message-trace.md): later messages start a new one.
    const trace = await this.#traceEraser.erase(patientServiceId);
    const erased: Record<string, number> = {};
    for (const eraser of this.#optOutErasers) {
      erased[eraser.name] = (erased[eraser.name] ?? 0) + (await eraser.erase(patientServiceId));
    }
    const requestId = await this.#record('opt_out', localId, request, 'done', {
      opt_out: created ? 1 : 0,
      queries_cancelled: jobs.removed,
      queries_in_flight: jobs.inFlight,
      trace,
      ...erased,
    });
    return {
      request_id: requestId,
      patient_service_id: patientServiceId,
      opted_out: true,
      opted_out_at: optedOutAt,
      queries_cancelled: jobs.removed,
    };
  }

  /**
   * The message trace of the patient of `localId` (its own service id's, not a merge survivor's),
   * newest message first, at most `limit` (default 50). Audited (`read_trace`, the number of
   * messages shown); throws {@link UnknownPatientError} for a local id never seen.
   */
  async traceOf(
    localId: string,
    request: AdminRequest,
    options: { limit?: number } = {},
  ): Promise<PatientTraceReport> {
    const patientServiceId = await this.crosswalk.find(localId);
    if (patientServiceId === undefined) {
      throw new UnknownPatientError(
        await this.#record('read_trace', localId, request, 'unknown_patient', {}),
      );
    }
    const { messages, skipped } = await this.traces.byPatient(patientServiceId, options);
    const requestId = await this.#record('read_trace', localId, request, 'done', {
      messages: messages.length,
    });
    return { request_id: requestId, patient_service_id: patientServiceId, messages, skipped };
  }

  /**
   * Lifts the opt-out: the next update schedules queries again (nothing is re-run for updates
   * received while opted out). Throws {@link UnknownPatientError} for a local id never seen.
   */
  async optIn(localId: string, request: AdminRequest): Promise<OptInReport> {
    const patientServiceId = await this.crosswalk.find(localId);
    if (patientServiceId === undefined) {
      throw new UnknownPatientError(
        await this.#record('opt_in', localId, request, 'unknown_patient', {}),
      );
    }
    const was = await this.consent.optIn(patientServiceId);
    const requestId = await this.#record('opt_in', localId, request, 'done', {
      opt_out: was ? 1 : 0,
    });
    return {
      request_id: requestId,
      patient_service_id: patientServiceId,
      opted_out: false,
      was_opted_out: was,
    };
  }
}
