import { MAX_MERGE_HOPS, type Crosswalk, type CrosswalkPlan } from '../identity/crosswalk.ts';
import { categoriesFromRules, type PresetRule } from '../presets/rules.ts';
import { problemListCategories, type ProblemListMode } from '../presets/problem-list.ts';
import { applyClinicalChanges } from '../records/apply-clinical-changes.ts';
import type { ClinicalChange } from '../records/clinical-change.ts';
import type { ClinicalRecord } from '../records/clinical-record.ts';
import type { RecordStore } from '../records/record-store.ts';
import type { ProblemTerminology } from '../terminology/problem-terminology.ts';
import type { ReceiptHead } from '../trace/receipt-head.ts';
import { CommitConflictError } from './errors/commit-conflict-error.ts';
import { DEFAULT_CACHE_ENTRIES, PatientLocator, type LocatedPatient } from './patient-locator.ts';
import {
  queriesAreFresh,
  type CommitInput,
  type StoredState,
  type UpdateCommitter,
} from './update-committer.ts';

export interface ClinicalUpdatesOptions {
  crosswalk: Crosswalk;
  records: RecordStore;
  committer: UpdateCommitter;
  /** `config.presets.rules`. */
  rules: readonly PresetRule[];
  /** `config.presets.from_problem_list`. */
  problemList: { enabled: boolean; categories: ProblemListMode };
  /**
   * Maps non-ICD-10-CM problem codes to ICD-10-CM before the commit (stored in the items).
   * @defaultValue none: problems keep the codings the feed gave
   */
  terminology?: ProblemTerminology | undefined;
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
  /**
   * Finds each message's patient, cached (the ingest process shares one between its feeds).
   * @defaultValue a locator of its own on `crosswalk`, {@link DEFAULT_CACHE_ENTRIES} entries
   */
  locator?: PatientLocator;
}

export interface ClinicalUpdate {
  /** The hospital's own patient id (PID-3 MR, the FHIR Patient id or identifier). */
  localId: string;
  source: 'hl7v2' | 'fhir';
  /** Names the message, for the result's `triggered_by` (e.g. `hl7v2:<MSH-3>:<MSH-10>`). */
  eventId: string;
  changes: ClinicalChange[];
  /** Kinds of data the message changed (`Condition`, `Observation`…), for config rules. */
  kinds: string[];
  /**
   * The message's receipt without its outcome (docs/message-trace.md): the commit records it.
   * @defaultValue none
   */
  receipt?: ReceiptHead | undefined;
  /**
   * Also answer `traced` and `queued` (the feeds' trace and counters).
   * @defaultValue false
   */
  report?: boolean | undefined;
}

/** What {@link ClinicalUpdates.apply} did. */
export interface AppliedUpdate {
  patientServiceId: string;
  version: number;
  changed: boolean;
  /** True when the commit script recorded the message's receipt (else the caller writes it). */
  traced?: boolean;
  /** Queries opened or joined. */
  queued?: number;
}

/**
 * What every clinical feed (HL7 v2, FHIR) does with a message: update the patient's clinical
 * record, keep the problem-list presets in step with it, and schedule the patient's queries. Each
 * step is awaited in Redis, so a caller that acknowledges after `apply` resolves acknowledges only
 * what is durable; a message that changes nothing schedules nothing (a resend is harmless).
 */
export class ClinicalUpdates {
  readonly #o: ClinicalUpdatesOptions;
  readonly #locator: PatientLocator;
  /** The committer: the feeds write the receipts of messages that store nothing with it. */
  readonly committer: UpdateCommitter;

  constructor(options: ClinicalUpdatesOptions) {
    this.#o = options;
    this.committer = options.committer;
    this.#locator =
      options.locator ??
      new PatientLocator({ crosswalk: options.crosswalk, maxEntries: DEFAULT_CACHE_ENTRIES });
  }

  /** The instance the ingest app's dependencies and `presets.*` configuration make. */
  static fromDeps(deps: {
    config: {
      presets: {
        rules: readonly PresetRule[];
        from_problem_list: ClinicalUpdatesOptions['problemList'];
      };
    };
    crosswalk: Crosswalk;
    records: RecordStore;
    committer: UpdateCommitter;
    terminology?: ProblemTerminology | undefined;
    locator?: PatientLocator | undefined;
  }): ClinicalUpdates {
    return new ClinicalUpdates({
      crosswalk: deps.crosswalk,
      records: deps.records,
      committer: deps.committer,
      terminology: deps.terminology,
      ...(deps.locator === undefined ? {} : { locator: deps.locator }),
      rules: deps.config.presets.rules,
      problemList: deps.config.presets.from_problem_list,
    });
  }

  #now(): Date {
    return this.#o.now?.() ?? new Date();
  }

  /** The patient's service id, or a plan to create it in the commit (a patient never seen). */
  async #patient(
    localId: string,
  ): Promise<{ patientServiceId: string; newPatient?: CrosswalkPlan }> {
    // A retired (merged) local id leads to its survivor: it gets no record or query of its own.
    const existing = await this.#o.crosswalk.findCurrent(localId);
    if (existing !== undefined) return { patientServiceId: existing };
    const newPatient = this.#o.crosswalk.plan(localId);
    return { patientServiceId: newPatient.patientServiceId, newPatient };
  }

  /**
   * The patient a local id's updates go to, with what the commit would read of it (one read-only
   * script, after a crosswalk lookup unless the locator had the id cached), following merges to
   * the survivor; or a plan to create the patient in the commit (a patient never seen). `stale`
   * when the cached id turned out outdated (the caller locates it again).
   */
  async #current(
    localId: string,
    followMerges: boolean,
  ): Promise<
    | { stale: true; located: LocatedPatient }
    | {
        stale?: false;
        located: LocatedPatient;
        patientServiceId: string;
        newPatient?: CrosswalkPlan;
        stored?: StoredState;
        verify?: { lookupKey: string; retiredKey: string };
      }
  > {
    const located = await this.#locator.locate(localId, { followMerges });
    if (located.kind === 'new') {
      return { located, patientServiceId: located.patientServiceId, newPatient: located.plan };
    }
    let patientServiceId = located.patientServiceId;
    const verify = located.verify;
    for (let hop = 0; ; hop++) {
      const stored = await this.#o.committer.storedState(
        patientServiceId,
        this.#o.crosswalk.retiredKeyOf(patientServiceId),
        hop === 0 ? verify?.lookupKey : undefined,
      );
      if (stored.stale) return { stale: true, located };
      // A retired (merged) local id leads to its survivor: it gets no record or query of its own.
      if (stored.survivor === undefined || hop >= MAX_MERGE_HOPS) {
        // Only the local id's own service id is checked (and cached), never a survivor's.
        return hop === 0 && verify !== undefined
          ? { located, patientServiceId, stored, verify }
          : { located, patientServiceId, stored };
      }
      if (hop === 0) this.#locator.forget(located);
      patientServiceId = stored.survivor;
    }
  }

  /**
   * Commits, re-reading and recomputing when another writer got there first, or when the
   * patient's cached service id turned out outdated (looked up again) or retired by a merge
   * (followed to the survivor).
   */
  async #commitWithRetry(
    attempt: (
      followMerges: boolean,
    ) => Promise<
      | (CommitInput & { located?: LocatedPatient })
      | { unchanged: { patientServiceId: string; version: number }; located?: LocatedPatient }
      | { stale: LocatedPatient }
    >,
  ): Promise<Required<AppliedUpdate>> {
    let followMerges = false;
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const input = await attempt(followMerges);
      if ('stale' in input) {
        this.#locator.forget(input.stale);
        continue;
      }
      if ('unchanged' in input) {
        if (input.located !== undefined) this.#locator.confirm(input.located);
        return { ...input.unchanged, changed: false, traced: false, queued: 0 };
      }
      const { located, ...commit } = input;
      const result = await this.#o.committer.commit(commit);
      if (
        result.status === 'stale' ||
        result.status === 'retired' ||
        result.status === 'conflict'
      ) {
        if (located !== undefined) this.#locator.forget(located);
        if (result.status === 'retired') followMerges = true;
        continue;
      }
      if (located !== undefined) this.#locator.confirm(located);
      if (result.status === 'missing') {
        // A known patient without a record (purged, expired) and a message that adds nothing.
        return {
          patientServiceId: input.patientServiceId,
          version: 0,
          changed: false,
          traced: false,
          queued: 0,
        };
      }
      if (result.status === 'ok' || result.status === 'unchanged') {
        return {
          patientServiceId: input.patientServiceId,
          version: result.version,
          changed: result.status === 'ok' && input.record.kind !== 'keep',
          traced: commit.receipt !== undefined && this.#o.committer.tracing,
          queued: result.status === 'ok' ? result.queries.length : 0,
        };
      }
      throw new Error(`unexpected commit answer for a clinical update: ${result.status}`);
    }
    throw new CommitConflictError(MAX_ATTEMPTS);
  }

  /**
   * The commit of a new clinical record computed from `version`: sealed, with the problem-list
   * presets it implies (when they are kept from the problem list).
   */
  #clinicalCommit(
    patient: { patientServiceId: string; newPatient?: CrosswalkPlan | undefined },
    record: ClinicalRecord,
    version: number,
    rest: Pick<CommitInput, 'eventId' | 'extraCategories' | 'merge' | 'receipt'>,
  ): CommitInput {
    const { patientServiceId, newPatient } = patient;
    return {
      patientServiceId,
      ...(newPatient === undefined ? {} : { newPatient }),
      record: {
        kind: 'clinical',
        sealed: this.#o.records.sealClinical(patientServiceId, record),
        expectedVersion: version,
      },
      now: this.#now(),
      ...(this.#o.problemList.enabled
        ? { problemList: problemListCategories(record, this.#o.problemList.categories) }
        : {}),
      ...rest,
    };
  }

  /**
   * Applies a message's changes to the patient's record and, in the same Redis script, brings the
   * problem-list presets in line with the new record and opens the patient's queries (see
   * UpdateCommitter). A message that changes nothing writes nothing and opens queries only where
   * they are stale (presets added since, or never opened for this version): a resend is harmless.
   */
  async apply(update: ClinicalUpdate): Promise<AppliedUpdate> {
    const applied = await this.#commitWithRetry(async (followMerges) => {
      const current = await this.#current(update.localId, followMerges);
      if (current.stale === true) return { stale: current.located };
      const { located, patientServiceId, newPatient, stored, verify } = current;
      const version = stored?.version ?? 0;
      const clinical = this.#o.records.openClinical(patientServiceId, stored?.sealedClinical);
      // Terminology (src/terminology/): mapped ICD-10-CM codings are stored in the items.
      const changes =
        this.#o.terminology === undefined
          ? update.changes
          : await this.#o.terminology.annotate(update.changes, clinical);
      const next = applyClinicalChanges(clinical, changes, version + 1);
      if (!next.changed && newPatient !== undefined) {
        // Nothing to store for a patient never seen: only its crosswalk entry.
        const resolved = await this.#o.crosswalk.resolve(update.localId);
        return { unchanged: { patientServiceId: resolved.patientServiceId, version: 0 } };
      }
      if (!next.changed) {
        // The record is as it was: its queries open again only if they are stale (new presets,
        // or never opened for this version). No work for nothing: when what was just read shows
        // they are not, not even the commit script runs.
        const extraCategories = categoriesFromRules(this.#o.rules, update.kinds);
        const problemList = this.#o.problemList.enabled
          ? problemListCategories(clinical, this.#o.problemList.categories)
          : undefined;
        if (stored !== undefined && queriesAreFresh(stored, problemList, extraCategories)) {
          this.#o.committer.countUnchanged();
          return { unchanged: { patientServiceId, version }, located };
        }
        return {
          located,
          patientServiceId,
          ...(verify === undefined ? {} : { verify }),
          record: { kind: 'keep' },
          onlyIfStale: true,
          eventId: update.eventId,
          now: this.#now(),
          extraCategories,
          receipt: update.receipt,
        };
      }
      return {
        located,
        ...(verify === undefined ? {} : { verify }),
        ...this.#clinicalCommit({ patientServiceId, newPatient }, next.record, version, {
          eventId: update.eventId,
          extraCategories: categoriesFromRules(this.#o.rules, update.kinds),
          receipt: update.receipt,
        }),
      };
    });
    if (update.report === true) return applied;
    const { traced: _traced, queued: _queued, ...rest } = applied;
    return rest;
  }

  /**
   * An HL7 merge (A40 and the like): the surviving patient takes over the prior one's record and
   * presets, in one script; the prior id keeps its crosswalk entry (for audit) but no longer has a
   * record or presets, and is retired in the same script: later updates of the prior local id go
   * to the survivor (a late message from a system that still knows the old id), never to a record
   * of its own, so the retired id gets no further queries.
   */
  async merge(input: {
    survivingLocalId: string;
    priorLocalId: string;
    eventId: string;
    /** The message's receipt without its outcome: the commit records it. @defaultValue none */
    receipt?: ReceiptHead | undefined;
    /** Also answer `traced` and `queued`. @defaultValue false */
    report?: boolean | undefined;
  }): Promise<{ patientServiceId: string; traced?: boolean; queued?: number }> {
    const prior = await this.#o.crosswalk.findCurrent(input.priorLocalId);
    if (prior === undefined) {
      return {
        patientServiceId: (await this.#o.crosswalk.resolve(input.survivingLocalId))
          .patientServiceId,
      };
    }
    const result = await this.#commitWithRetry(async () => {
      const { patientServiceId, newPatient } = await this.#patient(input.survivingLocalId);
      if (patientServiceId === prior) return { unchanged: { patientServiceId, version: 0 } };
      const [survivor, old] = await Promise.all([
        this.#o.records.readClinical(patientServiceId),
        this.#o.records.readClinical(prior),
      ]);
      const items = Object.values(old.clinical.items).map(({ version: _version, ...item }) => item);
      const changes: ClinicalChange[] = [
        ...items.map((item) => ({ type: 'upsert' as const, item })),
        { type: 'patient' as const, facets: old.clinical.patient },
      ];
      const next = applyClinicalChanges(survivor.clinical, changes, survivor.version + 1);
      return this.#clinicalCommit({ patientServiceId, newPatient }, next.record, survivor.version, {
        eventId: input.eventId,
        extraCategories: [],
        receipt: input.receipt,
        merge: {
          priorPatientServiceId: prior,
          priorExpectedVersion: old.version,
          retiredKey: this.#o.crosswalk.retiredKeyOf(prior),
        },
      });
    });
    if (input.report !== true) return { patientServiceId: result.patientServiceId };
    return {
      patientServiceId: result.patientServiceId,
      traced: result.traced,
      queued: result.queued,
    };
  }
}

/** A commit that keeps losing to other writers of the same record gives up after this many tries. */
const MAX_ATTEMPTS = 10;
