import type { RedisClient } from '../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import type { TerminologySlice } from '../config/config-slices.ts';
import { outboundAgents } from '../connections/outbound-agents.ts';
import type { ClinicalChange, ReportedItem } from '../records/clinical-change.ts';
import {
  CODE_SYSTEMS,
  type ClinicalRecord,
  type PatientIdentityFacets,
} from '../records/clinical-record.ts';
import { lookupCodeMap, type CodeMap } from './code-map.ts';
import { loadCsvCodeMap } from './csv-code-map.ts';
import { embeddedProblemMap } from './embedded-problem-map.ts';
import type { MapRuleContext } from './map-rule.ts';
import { canonicalSystem, problemSystemOf } from './problem-code-systems.ts';
import { loadRf2ExtendedMap, resolveRf2, type Rf2ExtendedMap } from './rf2-extended-map.ts';
import { TerminologyMetrics, type MappingSource } from './terminology-metrics.ts';
import { TerminologyServer } from './terminology-server.ts';
import { UnmappedProblems } from './unmapped-problems.ts';

export type TerminologySourceName = Exclude<MappingSource, 'icd10cm'>;

export interface ProblemTerminologyOptions {
  /** Sources tried in this order after a coding already in ICD-10-CM (`terminology.sources`). */
  sources: readonly TerminologySourceName[];
  rf2?: Rf2ExtendedMap | undefined;
  csv?: CodeMap | undefined;
  server?: TerminologyServer | undefined;
  /** @defaultValue the shipped table (`data/terminology/`) */
  embedded?: CodeMap | undefined;
  unmapped?: UnmappedProblems | undefined;
  metrics?: TerminologyMetrics | undefined;
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
}

const ACTIVE = new Set(['active', 'recurrence', 'relapse']);
const YEAR_MS = 365.2425 * 86_400_000;

function dateOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  const iso = /^\d{8}/.test(t) ? `${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}` : t;
  const ms = Date.parse(iso.length === 4 ? `${iso}-01-01` : iso.length === 7 ? `${iso}-01` : iso);
  return Number.isNaN(ms) ? undefined : ms;
}

const GENDER: Record<string, string> = { m: 'male', male: 'male', f: 'female', female: 'female' };

function isIcd10(coding: { system: string }): boolean {
  return problemSystemOf(coding.system) === 'icd10cm';
}

/**
 * The terminology step: gives every condition of a message that has no ICD-10-CM coding the
 * ICD-10-CM codes its other codings (SNOMED CT, ICD-9-CM, local codes) map to, so that the stored
 * item carries them. Problem-list presets (`problemListCategories`) and the nodes sent to the
 * service (`assemblePatient`) then see the mapped codes as they see a feed's own ICD-10-CM codes:
 * both stay pure functions of the stored record, and a mapping, once stored, does not change
 * when a file or the server changes later (the next message about the problem maps it anew).
 *
 * Sources, first non-empty answer wins: the configured `sources` in order (the hospital's RF2
 * map, its CSV, the terminology server, the embedded table). RF2 rules are evaluated with the
 * patient's gender and age at the problem's onset (now when the onset is unknown). A server
 * failure is counted and the problem falls through to the next source: the feed is never held up
 * by the terminology server. Active problems that map to nothing are counted by code system.
 */
export class ProblemTerminology {
  readonly #o: ProblemTerminologyOptions;
  readonly #embedded: CodeMap;

  constructor(options: ProblemTerminologyOptions) {
    this.#o = options;
    this.#embedded = options.embedded ?? embeddedProblemMap();
  }

  /** The instance `terminology.*` configures; reads the mapping files (fails fast if unusable). */
  static fromConfig(deps: {
    /** `terminology.*`, `outbound.*`, `redis.prefix` (see configSlices). */
    config: TerminologySlice;
    redis: RedisClient;
    registry?: Registry | undefined;
  }): ProblemTerminology {
    const { config, redis, registry } = deps;
    const t = config.terminology;
    const prefix = config.redis.prefix;
    const server =
      t.sources.includes('server') && t.server.base_url !== null
        ? new TerminologyServer({
            baseUrl: t.server.base_url,
            token: t.server.token,
            method: t.server.method,
            conceptMapUrl: t.server.concept_map_url,
            targetParameter: t.server.target_parameter,
            timeoutMs: t.server.timeout_ms,
            cacheTtlS: t.server.cache_ttl_s,
            redis,
            prefix,
            agent: outboundAgents(config.outbound),
          })
        : undefined;
    return new ProblemTerminology({
      sources: t.sources,
      rf2:
        t.sources.includes('rf2_file') && t.rf2_file !== null
          ? loadRf2ExtendedMap(t.rf2_file)
          : undefined,
      csv:
        t.sources.includes('csv_file') && t.csv_file !== null
          ? loadCsvCodeMap(t.csv_file)
          : undefined,
      server,
      unmapped: new UnmappedProblems({ redis, prefix, registry }),
      metrics: registry === undefined ? undefined : new TerminologyMetrics(registry),
    });
  }

  /**
   * The message's changes with ICD-10-CM codings added to its conditions; `record` is the stored
   * record the changes apply to (for the patient's gender, birth date and other problems).
   */
  async annotate(
    changes: readonly ClinicalChange[],
    record: ClinicalRecord,
  ): Promise<ClinicalChange[]> {
    const facets: Partial<PatientIdentityFacets> = { ...record.patient };
    const conditions = new Set<string>();
    const noteConditions = (items: Iterable<Pick<ReportedItem, 'kind' | 'codings' | 'status'>>) => {
      for (const item of items) {
        if (item.kind !== 'condition') continue;
        if (item.status !== undefined && !ACTIVE.has(item.status.toLowerCase())) continue;
        for (const c of item.codings)
          if (problemSystemOf(c.system) === 'snomed') conditions.add(c.code.trim());
      }
    };
    noteConditions(Object.values(record.items));
    for (const change of changes) {
      if (change.type === 'patient') Object.assign(facets, definedOnly(change.facets));
      if (change.type === 'replace') {
        if (change.facets !== undefined) Object.assign(facets, definedOnly(change.facets));
        noteConditions(change.items);
      }
      if (change.type === 'upsert') noteConditions([change.item]);
    }
    const out: ClinicalChange[] = [];
    // A problem repeated in one message (several DG1 with the same code) is counted unmapped once.
    const unmapped = new Set<string>();
    for (const change of changes) {
      if (change.type === 'upsert') {
        out.push({ ...change, item: await this.#item(change.item, facets, conditions, unmapped) });
      } else if (change.type === 'replace') {
        const items: ReportedItem[] = [];
        for (const item of change.items)
          items.push(await this.#item(item, facets, conditions, unmapped));
        out.push({ ...change, items });
      } else {
        out.push(change);
      }
    }
    return out;
  }

  #context(
    item: ReportedItem,
    facets: Partial<PatientIdentityFacets>,
    conditions: ReadonlySet<string>,
  ): MapRuleContext {
    const born = dateOf(facets.birthDate);
    const at = dateOf(item.effectiveAt) ?? (this.#o.now?.() ?? new Date()).getTime();
    const age = born === undefined || at < born ? undefined : (at - born) / YEAR_MS;
    return {
      ageYears: age,
      gender: GENDER[(facets.gender ?? '').trim().toLowerCase()],
      conditions,
    };
  }

  async #item(
    item: ReportedItem,
    facets: Partial<PatientIdentityFacets>,
    conditions: ReadonlySet<string>,
    unmapped: Set<string>,
  ): Promise<ReportedItem> {
    if (item.kind !== 'condition' || item.codings.length === 0) return item;
    if (item.codings.some(isIcd10)) return item;
    const context = this.#context(item, facets, conditions);
    for (const source of this.#o.sources) {
      for (const coding of item.codings) {
        const codes = await this.#lookup(source, coding, context);
        if (codes === undefined || codes.length === 0) continue;
        this.#o.metrics?.mapped.inc({ source });
        return {
          ...item,
          codings: [
            ...item.codings,
            ...codes.map((code) => ({ system: CODE_SYSTEMS.icd10cm, code })),
          ],
        };
      }
    }
    const status = item.status?.trim().toLowerCase();
    // Named by its first coding, as the list of unmapped codes names it.
    const first = item.codings[0];
    const problem =
      first === undefined ? '' : `${canonicalSystem(first.system)}|${first.code.trim()}`;
    if ((status === undefined || status === '' || ACTIVE.has(status)) && !unmapped.has(problem)) {
      unmapped.add(problem);
      await this.#o.unmapped?.record(item.codings);
    }
    return item;
  }

  async #lookup(
    source: TerminologySourceName,
    coding: { system: string; code: string },
    context: MapRuleContext,
  ): Promise<readonly string[] | undefined> {
    switch (source) {
      case 'rf2_file':
        if (this.#o.rf2 === undefined || problemSystemOf(coding.system) !== 'snomed')
          return undefined;
        return resolveRf2(this.#o.rf2, coding.code, context);
      case 'csv_file':
        return this.#o.csv === undefined
          ? undefined
          : lookupCodeMap(this.#o.csv, coding.system, coding.code);
      case 'embedded':
        return lookupCodeMap(this.#embedded, coding.system, coding.code);
      case 'server':
        if (this.#o.server === undefined) return undefined;
        try {
          return (
            await this.#o.server.translate(canonicalSystem(coding.system), coding.code.trim())
          ).codes;
        } catch (error) {
          if ((error as { code?: string }).code !== 'ERR_TERMINOLOGY_SERVER') throw error;
          this.#o.metrics?.serverErrors.inc();
          return undefined;
        }
    }
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
