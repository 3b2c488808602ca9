import type { Crosswalk } from '../identity/crosswalk.ts';
import type { PresetStore } from '../presets/preset-store.ts';
import { categoriesFromRules, type PresetRule } from '../presets/rules.ts';
import { problemListCategories, type ProblemListMode } from '../presets/problem-list.ts';
import type { QueryScheduler } from '../queries/query-scheduler.ts';
import type { ClinicalChange } from '../records/clinical-change.ts';
import type { RecordStore } from '../records/record-store.ts';

export interface ClinicalUpdatesOptions {
  crosswalk: Crosswalk;
  records: RecordStore;
  presets: PresetStore;
  scheduler: QueryScheduler;
  /** `config.presets.rules`. */
  rules: readonly PresetRule[];
  /** `config.presets.from_problem_list`. */
  problemList: { enabled: boolean; categories: ProblemListMode };
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
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
}

/**
 * What every clinical feed (HL7 v2, FHIR) does with a message: update the patient's clinical
 * record, keep the problem-list presets in step with it, and schedule the patient's queries. Each
 * step is awaited in Redis, so a caller that acknowledges after `apply` resolves acknowledges only
 * what is durable; a message that changes nothing schedules nothing (a resend is harmless).
 */
export class ClinicalUpdates {
  readonly #o: ClinicalUpdatesOptions;

  constructor(options: ClinicalUpdatesOptions) {
    this.#o = options;
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
    presets: PresetStore;
    scheduler: QueryScheduler;
  }): ClinicalUpdates {
    return new ClinicalUpdates({
      crosswalk: deps.crosswalk,
      records: deps.records,
      presets: deps.presets,
      scheduler: deps.scheduler,
      rules: deps.config.presets.rules,
      problemList: deps.config.presets.from_problem_list,
    });
  }

  #now(): Date {
    return this.#o.now?.() ?? new Date();
  }

  async apply(
    update: ClinicalUpdate,
  ): Promise<{ patientServiceId: string; version: number; changed: boolean }> {
    const { patientServiceId } = await this.#o.crosswalk.resolve(update.localId);
    const now = this.#now();
    const { version, changed } = await this.#o.records.updateClinical(
      patientServiceId,
      update.changes,
      now,
    );
    if (changed) await this.#runQueries(patientServiceId, update.eventId, update.kinds, now);
    return { patientServiceId, version, changed };
  }

  /**
   * An HL7 A40 merge: the surviving patient takes over the prior one's record and presets; the
   * prior id keeps its crosswalk entry (for audit) but no longer has a record or presets.
   */
  async merge(input: {
    survivingLocalId: string;
    priorLocalId: string;
    eventId: string;
  }): Promise<{ patientServiceId: string }> {
    const { patientServiceId } = await this.#o.crosswalk.resolve(input.survivingLocalId);
    const prior = await this.#o.crosswalk.find(input.priorLocalId);
    if (prior === undefined || prior === patientServiceId) return { patientServiceId };
    const now = this.#now();
    const stored = await this.#o.records.get(prior);
    const items = Object.values(stored?.clinical?.items ?? {}).map(
      ({ version: _version, ...item }) => item,
    );
    const changes: ClinicalChange[] = [
      ...items.map((item) => ({ type: 'upsert' as const, item })),
      ...(stored?.clinical ? [{ type: 'patient' as const, facets: stored.clinical.patient }] : []),
    ];
    await this.#o.records.updateClinical(patientServiceId, changes, now);
    for (const preset of await this.#o.presets.list(prior)) {
      await this.#o.presets.put(patientServiceId, preset.ccsr_category, preset.source, now);
      await this.#o.presets.delete(prior, preset.ccsr_category);
    }
    await this.#o.records.remove(prior);
    await this.#runQueries(patientServiceId, input.eventId, [], now);
    return { patientServiceId };
  }

  /** Brings problem-list presets in line with the newest record, then schedules every preset. */
  async #runQueries(patientServiceId: string, eventId: string, kinds: string[], now: Date) {
    if (this.#o.problemList.enabled) await this.#syncProblemList(patientServiceId, now);
    const presets = (await this.#o.presets.list(patientServiceId)).map((p) => p.ccsr_category);
    const categories = new Set([...presets, ...categoriesFromRules(this.#o.rules, kinds)]);
    const trigger = { eventId, at: now.toISOString() };
    for (const category of categories) {
      await this.#o.scheduler.schedule(patientServiceId, category, trigger);
    }
  }

  async #syncProblemList(patientServiceId: string, now: Date) {
    // The newest record, not the one this message wrote: a slower, older message must not take
    // back a preset a newer one added.
    const clinical = (await this.#o.records.get(patientServiceId))?.clinical;
    const wanted = new Set(
      clinical ? problemListCategories(clinical, this.#o.problemList.categories) : [],
    );
    const current = await this.#o.presets.list(patientServiceId);
    for (const category of wanted) {
      await this.#o.presets.put(patientServiceId, category, 'problem_list', now);
    }
    for (const preset of current) {
      if (preset.source === 'problem_list' && !wanted.has(preset.ccsr_category)) {
        await this.#o.presets.delete(patientServiceId, preset.ccsr_category);
      }
    }
  }
}
