import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { patientKeyIdentifier } from '../../config/patient-key.ts';
import { toValidationItems } from '../../interface/validation-error.ts';
import type { ClinicalChange, ReportedItem } from '../../records/clinical-change.ts';
import type { PatientIdentityFacets } from '../../records/clinical-record.ts';
import type { ReceiptHead } from '../../trace/receipt-head.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import type { FeedTrace } from '../feed-trace.ts';
import type { EventTracker } from './event-tracker.ts';
import { subscriptionHash } from './event-tracker.ts';
import type { FhirClient } from './fhir-client.ts';
import { FhirDeleteUnavailableError } from './fhir-delete-unavailable-error.ts';
import { FhirServerUnavailableError } from './fhir-errors.ts';
import type { FhirMetrics } from './fhir-metrics.ts';
import { parseReference, ResourceSchema, type FhirResource } from './fhir-resource.ts';
import { MAPPED_TYPES, mapClinicalResource, parsePatient, patientFacets } from './map-resource.ts';
import {
  parseNotification,
  parseStatusResource,
  type IdentifierFocus,
  type NotificationBundleType,
  type SubscriptionNotification,
} from './notification.ts';

/** What a clinical feed hands over: `ClinicalUpdates.apply` (src/ingest/clinical-updates.ts). */
export interface ClinicalUpdater {
  apply(input: {
    localId: string;
    source: 'hl7v2' | 'fhir';
    eventId: string;
    changes: ClinicalChange[];
    kinds: string[];
    /** The message's receipt without its outcome: the commit records it. */
    receipt?: ReceiptHead | undefined;
    /** Also answer `traced` and `queued`. */
    report?: boolean | undefined;
  }): Promise<{
    patientServiceId: string;
    version: number;
    changed: boolean;
    /** True when the commit recorded the receipt. */
    traced?: boolean;
    queued?: number;
  }>;
}

/** Purges a patient named by its local id (`PatientAdmin.purge` with actor `fhir`). */
export interface PatientDeleter {
  purge(localId: string): Promise<'purged' | 'unknown'>;
}

export interface FhirIngestOptions {
  /** Undefined when this process has no patient admin: a FHIR Patient delete is then answered 503. */
  patients?: PatientDeleter | undefined;
  updates: ClinicalUpdater;
  tracker: EventTracker;
  /** Undefined when `fhir.base_url` is not set: id-only payloads then cannot be fetched. */
  client: FhirClient | undefined;
  /**
   * The identifier systems whose value is a Patient's local id, tried in order
   * (`fhir.patient_identifier_system`, then `identity.patient_key.hospital_mrn`'s: see
   * `fhirPatientKeySystems`); empty = the Patient's logical id is the local id.
   */
  patientIdentifierSystems: readonly string[];
  metrics: FhirMetrics;
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
  /** The `fhir` feed's counters and receipts. @defaultValue none */
  trace?: FeedTrace | undefined;
}

/** A log-safe account of a notification: counts and kinds, never contents or ids. */
export interface NotificationSummary {
  bundle_type: NotificationBundleType;
  notification_type: string;
  subscription: string;
  resources: number;
  events: number;
  patients: number;
  gap?: { missing: number; recovered: number; events_operation: string };
  outcome: string;
}

type Loc = readonly (string | number)[];
interface Resolved {
  resource: FhirResource & { id: string };
  loc: Loc;
}

/** One message's changes for one patient, keyed by the Patient's logical id. */
interface PatientChanges {
  changes: ClinicalChange[];
  kinds: Set<string>;
}

/** What `POST /v1/fhir/Bundle` takes (also its OpenAPI description). */
export const WholeBundleSchema = z.looseObject({
  resourceType: z.literal('Bundle'),
  id: z.string().optional(),
  meta: z
    .looseObject({
      tag: z
        .array(z.looseObject({ system: z.string().optional(), code: z.string().optional() }))
        .optional(),
    })
    .optional(),
  type: z.enum(['transaction', 'collection', 'batch', 'searchset', 'document'], {
    error:
      'a Bundle of resources is a transaction, batch, collection, searchset or document (a message Bundle means its MessageHeader event, which is not processed here)',
  }),
  entry: z
    .array(
      z
        .looseObject({
          fullUrl: z.string().optional(),
          resource: ResourceSchema.optional(),
          // A transaction or batch entry: a DELETE or a read (GET/HEAD) carries no resource.
          request: z.looseObject({ method: z.string(), url: z.string() }).optional(),
        })
        .refine((e) => e.resource !== undefined || e.request !== undefined, {
          message: 'an entry holds a resource (or, in a transaction or batch, a request)',
          path: ['resource'],
        }),
    )
    .min(1),
});

/** How a Bundle changes the records of its patients. */
export type BundleMode = 'merge' | 'replace';

/** The `meta.tag` system by which a Bundle asks for a mode (`code`: `merge` or `replace`). */
export const BUNDLE_MODE_TAG_SYSTEM = 'urn:concordance-worker:bundle-mode';

function bundleModeTag(meta: { tag?: { system?: string; code?: string }[] } | undefined) {
  const code = meta?.tag?.find((t) => t.system === BUNDLE_MODE_TAG_SYSTEM)?.code;
  return code === 'merge' || code === 'replace' ? code : undefined;
}

function invalid(loc: Loc, msg: string, type = 'value_error'): RequestValidationError {
  return new RequestValidationError([{ loc: [...loc], msg, type }]);
}

/** A transaction or batch entry's `DELETE`: `<Type>/<id>`, or conditional (`<Type>?…`: no id). */
interface BundleDelete {
  type: string;
  id?: string;
}

function bundleDelete(url: string, loc: Loc): BundleDelete {
  const [path = '', query] = url.split('?', 2);
  if (query !== undefined) {
    const type = /(?:^|\/)([A-Z][A-Za-z]+)$/.exec(path)?.[1];
    if (type !== undefined) return { type };
  } else {
    const target = parseReference(path);
    if (target !== undefined) return target;
  }
  throw invalid(loc, 'a DELETE names <Type>/<id> or <Type>?<search>');
}

/** The resource with its logical id (a transaction entry may carry it only in a urn:uuid fullUrl). */
function withId(resource: FhirResource, fullUrl: string | undefined, loc: Loc) {
  const id = resource.id ?? /^urn:uuid:([A-Za-z0-9\-.]{1,64})$/.exec(fullUrl ?? '')?.[1];
  if (id === undefined)
    throw invalid([...loc, 'id'], 'a resource needs an id (or a urn:uuid fullUrl)');
  return { ...resource, id };
}

/** Indexes a payload's resources by fullUrl and by `Type/id`. */
class Payload {
  readonly byRef = new Map<string, Resolved>();
  readonly list: Resolved[] = [];

  add(resolved: Resolved, fullUrl: string | undefined): void {
    const { resource } = resolved;
    if (fullUrl !== undefined) this.byRef.set(fullUrl, resolved);
    this.byRef.set(`${resource.resourceType}/${resource.id}`, resolved);
    this.list.push(resolved);
  }

  find(reference: string): Resolved | undefined {
    const direct = this.byRef.get(reference);
    if (direct !== undefined) return direct;
    const parsed = parseReference(reference);
    return parsed === undefined ? undefined : this.byRef.get(`${parsed.type}/${parsed.id}`);
  }
}

/**
 * FHIR ingest: subscription notifications (R4 backport, R4B/R5) and whole-patient Bundles become
 * clinical-record changes, applied through {@link ClinicalUpdater}; event numbers are tracked per
 * subscription and gaps recovered through `$status`/`$events`.
 */
export class FhirIngest {
  readonly #o: FhirIngestOptions;

  constructor(options: FhirIngestOptions) {
    this.#o = options;
  }

  #client(): FhirClient {
    if (this.#o.client === undefined) {
      throw new FhirServerUnavailableError('fhir.base_url is not configured: cannot fetch');
    }
    return this.#o.client;
  }

  // ---- patient identity ----------------------------------------------------------------------

  /** The local id of the Patient with this logical id. */
  async #localId(patientId: string, payload: Payload, loc: Loc): Promise<string> {
    const systems = this.#o.patientIdentifierSystems;
    if (systems.length === 0) return patientId;
    let patient: unknown = payload.find(`Patient/${patientId}`)?.resource;
    if (patient === undefined) {
      patient = await this.#client().read('Patient', patientId);
      if (patient === undefined)
        throw invalid(loc, 'the subject Patient does not exist on the FHIR server');
    }
    const key = patientKeyIdentifier(parsePatient(patient, loc).identifier ?? [], systems);
    if (key !== undefined) return key;
    throw invalid(
      loc,
      'the Patient has no identifier of the configured systems (fhir.patient_identifier_system, identity.patient_key.hospital_mrn.fhir_identifier_systems)',
    );
  }

  /**
   * A notification about a Condition or an Observation may be the first we hear of a patient, and
   * without the Patient (its birth date) no record can be assembled. Where a FHIR server is
   * configured, the Patient is read for a group that lacks it. Optional: a failed read leaves the
   * record as it was (the queries then wait for a Patient, ending `rejected` meanwhile).
   */
  async #addPatientFacets(
    patientId: string,
    group: PatientChanges,
    payload: Payload,
  ): Promise<void> {
    if (group.changes.some((c) => c.type === 'patient')) return;
    const reference = `Patient/${patientId}`;
    let found = payload.find(reference);
    if (found === undefined && this.#o.client !== undefined) {
      try {
        const fetched = ResourceSchema.safeParse(await this.#o.client.read('Patient', patientId));
        if (!fetched.success || fetched.data.resourceType !== 'Patient') return;
        const loc = ['fhir-server', reference];
        found = { resource: withId(fetched.data, undefined, loc), loc };
        // #localId reads it from the payload: one read per notification.
        payload.add(found, reference);
      } catch {
        return; // a convenience: the notification's own changes still apply
      }
    }
    if (found === undefined) return;
    try {
      group.changes.unshift({
        type: 'patient',
        facets: patientFacets(parsePatient(found.resource, found.loc), patientId),
      });
    } catch {
      // A Patient we cannot read adds nothing.
    }
  }

  /** The logical id of the Patient a reference names (via the payload for urn:uuid references). */
  #patientOf(reference: string, payload: Payload, loc: Loc): string {
    const inPayload = payload.find(reference)?.resource;
    if (inPayload !== undefined) {
      if (inPayload.resourceType !== 'Patient') throw invalid(loc, 'the subject must be a Patient');
      return inPayload.id;
    }
    const parsed = parseReference(reference);
    if (parsed?.type !== 'Patient') throw invalid(loc, 'the subject must be a Patient reference');
    return parsed.id;
  }

  /** Groups resources' changes by patient (logical id). Validation only: no side effects. */
  #group(resources: readonly Resolved[], payload: Payload): Map<string, PatientChanges> {
    const byPatient = new Map<string, PatientChanges>();
    const entry = (patientId: string) => {
      let group = byPatient.get(patientId);
      if (group === undefined) {
        group = { changes: [], kinds: new Set() };
        byPatient.set(patientId, group);
      }
      return group;
    };
    for (const { resource, loc } of resources) {
      if (resource.resourceType === 'Patient') {
        const facets = patientFacets(parsePatient(resource, loc), resource.id);
        const group = entry(resource.id);
        group.changes.push({ type: 'patient', facets });
        group.kinds.add('Patient');
        continue;
      }
      const mapped = mapClinicalResource(resource, loc);
      if (mapped === undefined) continue;
      if (mapped.subject === undefined)
        throw invalid([...loc, 'subject'], 'a subject Patient is required');
      const group = entry(this.#patientOf(mapped.subject, payload, [...loc, 'subject']));
      group.changes.push(mapped.change);
      group.kinds.add(mapped.kind);
    }
    return byPatient;
  }

  // ---- Bundles (collection, transaction, batch, searchset) ---------------------------------

  /**
   * A Bundle of one or more patients' resources, split per patient; each patient's changes are
   * applied through {@link ClinicalUpdater} (one commit per patient). `merge` (the default) updates
   * the resources the Bundle carries and leaves the rest of the record alone; `replace` makes each
   * patient's record exactly the Bundle's resources of that patient (identity facets merged).
   * Everything is validated before the first patient is applied.
   */
  async applyBundle(
    body: unknown,
    requestedMode?: BundleMode,
  ): Promise<{
    mode: BundleMode;
    /** Each patient's commit, with the queries it queued. */
    patients: { patientServiceId: string; version: number; changed: boolean; queued?: number }[];
    resources: number;
    items: number;
  }> {
    const parsed = WholeBundleSchema.safeParse(body);
    if (!parsed.success) {
      throw new RequestValidationError(toValidationItems(parsed.error.issues, ['body']));
    }
    const mode = requestedMode ?? bundleModeTag(parsed.data.meta) ?? 'merge';
    const payload = new Payload();
    let ignored = 0;
    const deletes: BundleDelete[] = [];
    let reads = 0;
    parsed.data.entry.forEach((e, i) => {
      const loc = ['body', 'entry', i, 'resource'];
      if (e.resource === undefined) {
        // Entries without a resource (the schema holds a request then): a DELETE is applied as
        // the rest-hook's DELETE is; a read (GET, HEAD) has nothing to ingest.
        if (e.request?.method.toUpperCase() === 'DELETE') {
          deletes.push(bundleDelete(e.request.url, ['body', 'entry', i, 'request', 'url']));
        } else reads++;
        return;
      }
      if (!MAPPED_TYPES.has(e.resource.resourceType)) {
        ignored++;
        if (e.resource.id === undefined) return;
      }
      payload.add({ resource: withId(e.resource, e.fullUrl, loc), loc }, e.fullUrl);
    });
    const grouped = this.#group(payload.list, payload);
    // Local ids first (they may need the FHIR server): nothing is applied if one cannot be found.
    const targets: { localId: string; group: PatientChanges }[] = [];
    for (const [patientId, group] of grouped) {
      const at = payload.find(`Patient/${patientId}`)?.loc ?? ['body', 'entry'];
      targets.push({ localId: await this.#localId(patientId, payload, at), group });
    }
    this.#o.metrics.ignore('resource_type', ignored);
    this.#o.metrics.ignore('bundle_read', reads);
    if (targets.length === 0 && deletes.length === 0) this.#o.metrics.ignore('notification');
    // Deletes first, as a FHIR server processes a transaction (then creates and updates).
    for (const target of deletes) await this.#deleteEntry(target);
    const bundleId =
      parsed.data.id ??
      createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 32);
    // The Bundle's receipts (one per patient's commit) go under its id.
    const receipt = this.#o.trace?.head(
      {
        controlId: bundleId,
        sender: { application: null, facility: null },
        type: 'Bundle',
        traceId: null,
        raw: JSON.stringify(body),
      },
      { code: '202' },
    );
    const patients = [];
    let items = 0;
    for (const { localId, group } of targets) {
      let changes: ClinicalChange[] = group.changes;
      if (mode === 'replace') {
        const upserts: ReportedItem[] = [];
        let facets: Partial<PatientIdentityFacets> = {};
        for (const change of group.changes) {
          if (change.type === 'upsert') upserts.push(change.item);
          else if (change.type === 'patient') facets = change.facets;
        }
        changes = [{ type: 'replace', items: upserts, facets }];
      }
      items += group.changes.filter((c) => c.type === 'upsert').length;
      patients.push(
        await this.#apply(
          {
            localId,
            source: 'fhir',
            eventId: `fhir:bundle:${bundleId}`,
            changes,
            kinds: [...group.kinds],
          },
          receipt,
        ),
      );
    }
    if (targets.length === 0) await this.#nothingApplied(receipt, deletes.length > 0);
    return { mode, patients, resources: payload.list.length, items };
  }

  /**
   * One patient's changes of a message, with its receipt: the commit records it; when no commit
   * ran (answered unchanged before the script), it is written here. Counts the queries queued.
   */
  async #apply(
    input: Parameters<ClinicalUpdater['apply']>[0],
    receipt: ReceiptHead | undefined,
  ): ReturnType<ClinicalUpdater['apply']> {
    const applied = await this.#o.updates.apply({ ...input, receipt, report: true });
    this.#o.trace?.queued(applied.queued ?? 0);
    if (receipt !== undefined && applied.traced !== true) {
      await this.#o.trace?.record(receipt, {
        state: 'unchanged',
        psid: applied.patientServiceId,
        version: applied.version === 0 ? null : applied.version,
      });
    }
    return applied;
  }

  /** A message that applied no patient: filtered (only deletes: stored, naming no patient). */
  async #nothingApplied(receipt: ReceiptHead | undefined, deleted: boolean): Promise<void> {
    if (!deleted) this.#o.trace?.filtered();
    await this.#o.trace?.record(receipt, { state: deleted ? 'stored' : 'filtered' });
  }

  // ---- resources read or received outside notifications (classic rest-hook) -----------------

  /**
   * Resources of any patients (a classic rest-hook PUT, or what a ping's search found), applied
   * per patient as a `merge` Bundle would be. Resources of types we do not use are counted.
   */
  async applyResources(
    resources: readonly unknown[],
    eventId: string,
    loc: Loc,
    /** The message they came in (a rest-hook body), for its receipt. @defaultValue none */
    message?: { controlId: string; raw: unknown; type: string | null },
  ): Promise<{ patients: number; ignored: number }> {
    const receipt =
      message === undefined
        ? undefined
        : this.#o.trace?.head(
            {
              controlId: message.controlId,
              sender: { application: null, facility: null },
              type: message.type,
              traceId: null,
              raw: JSON.stringify(message.raw),
            },
            { code: '200' },
          );
    const payload = new Payload();
    let ignored = 0;
    resources.forEach((r, i) => {
      const at = [...loc, i];
      const parsed = ResourceSchema.safeParse(r);
      if (!parsed.success) {
        throw new RequestValidationError(toValidationItems(parsed.error.issues, at));
      }
      if (!MAPPED_TYPES.has(parsed.data.resourceType)) {
        ignored++;
        return;
      }
      payload.add({ resource: withId(parsed.data, undefined, at), loc: at }, undefined);
    });
    const grouped = this.#group(payload.list, payload);
    for (const [patientId, group] of grouped) {
      await this.#addPatientFacets(patientId, group, payload);
      const localId = await this.#localId(patientId, payload, loc);
      await this.#apply(
        { localId, source: 'fhir', eventId, changes: group.changes, kinds: [...group.kinds] },
        receipt,
      );
    }
    this.#o.metrics.ignore('resource_type', ignored);
    if (grouped.size === 0) {
      this.#o.metrics.ignore('notification');
      if (message !== undefined) await this.#nothingApplied(receipt, false);
    }
    return { patients: grouped.size, ignored };
  }

  /**
   * A Bundle entry's `DELETE`: `<Type>/<id>` as {@link deleteResource}; a conditional delete
   * (`Patient?identifier=…`) names no patient we can resolve here, and is counted.
   */
  async #deleteEntry(target: BundleDelete): Promise<void> {
    if (target.id !== undefined) {
      await this.deleteResource(target.type, target.id);
      return;
    }
    this.#o.metrics.ignore(target.type === 'Patient' ? 'delete_unresolvable' : 'resource_type');
  }

  /**
   * A resource deleted on the FHIR server. A Patient: the patient is purged as HL7 A23 does
   * (audit actor `fhir`); another type: that item leaves the patient's record when we hold it.
   */
  async deleteResource(type: string, id: string): Promise<'purged' | 'unknown' | 'ignored'> {
    if (type === 'Patient') return this.#deletePatient(id);
    this.#o.metrics.ignore('resource_type');
    return 'ignored';
  }

  async #deletePatient(patientId: string): Promise<'purged' | 'unknown' | 'ignored'> {
    const deleter = this.#o.patients;
    if (deleter === undefined) {
      throw new FhirDeleteUnavailableError('patient purge is not configured in this process');
    }
    if (this.#o.patientIdentifierSystems.length > 0) {
      // The deleted Patient can no longer be read for its identifier: see docs/clinical-feeds.md.
      this.#o.metrics.ignore('delete_unresolvable');
      return 'ignored';
    }
    const outcome = await deleter.purge(patientId);
    if (outcome === 'unknown') this.#o.metrics.ignore('delete_unknown_patient');
    else this.#o.metrics.deletes.inc();
    return outcome;
  }

  // ---- notifications -------------------------------------------------------------------------

  async handleNotification(body: unknown, log: Logger): Promise<NotificationSummary> {
    const n = parseNotification(body);
    // Handshakes, heartbeats and status answers carry no clinical content (no receipt).
    if (n.type !== 'event-notification' && n.type !== 'query-event') this.#o.trace?.filtered();
    const summary: NotificationSummary = {
      bundle_type: n.bundleType,
      notification_type: n.type,
      subscription: subscriptionHash(n.subscription),
      resources: n.entries.length,
      events: n.events.length,
      patients: 0,
      outcome: 'ignored',
    };
    const tracker = this.#o.tracker;
    switch (n.type) {
      case 'handshake':
        if (n.eventsSinceSubscriptionStart !== undefined) {
          await tracker.baseline(n.subscription, n.eventsSinceSubscriptionStart);
        }
        summary.outcome = 'handshake';
        return summary;
      case 'heartbeat': {
        await tracker.heartbeat(n.subscription, this.#o.now?.() ?? new Date(), n.status);
        const count = n.eventsSinceSubscriptionStart;
        const last = await tracker.lastEvent(n.subscription);
        if (count !== undefined && last !== undefined && count > last) {
          summary.gap = await this.#recover(n, last + 1, count, log);
          await tracker.advance(n.subscription, count);
        }
        summary.outcome = 'heartbeat';
        return summary;
      }
      case 'query-status':
        summary.outcome = 'status';
        return summary;
      case 'event-notification':
      case 'query-event': {
        // Everything in the payload is validated before anything is changed or fetched.
        const prepared = this.#prepare(n, ['body']);
        this.#group(prepared.list, prepared);
        const numbers = n.events
          .map((e) => e.eventNumber)
          .filter((x): x is number => x !== undefined);
        const first = numbers.length > 0 ? Math.min(...numbers) : undefined;
        const newest = numbers.length > 0 ? Math.max(...numbers) : n.eventsSinceSubscriptionStart;
        const last = await tracker.lastEvent(n.subscription);
        if (first !== undefined && last !== undefined && first > last + 1) {
          summary.gap = await this.#recover(n, last + 1, first - 1, log);
        }
        summary.patients = await this.#applyEvents(n, prepared, body);
        if (newest !== undefined) await tracker.advance(n.subscription, newest);
        summary.outcome = 'applied';
        return summary;
      }
    }
  }

  /** Validates a notification's payload and indexes it. */
  #prepare(n: SubscriptionNotification, loc: Loc): Payload {
    const payload = new Payload();
    n.entries.forEach((e, i) => {
      if (e.resource === undefined) return;
      // A resource we do not use needs no id: it is only counted (see #applyEvents).
      if (!MAPPED_TYPES.has(e.resource.resourceType) && e.resource.id === undefined) return;
      const at = [...loc, 'entry', i + 1, 'resource'];
      const resolved = { resource: withId(e.resource, e.fullUrl, at), loc: at };
      payload.add(resolved, e.fullUrl);
    });
    // Validate every mapped resource now (the subject is checked per event).
    for (const r of payload.list) {
      if (r.resource.resourceType === 'Patient') parsePatient(r.resource, r.loc);
      else mapClinicalResource(r.resource, r.loc);
    }
    return payload;
  }

  /**
   * The resource an identifier-only focus names, found by `GET <type>?identifier=<system>|<value>`
   * on the FHIR server; undefined (counted) when the type is not one we use, or the server finds
   * none or several.
   */
  async #resolveIdentifier(
    focus: IdentifierFocus,
    payload: Payload,
  ): Promise<Resolved | undefined> {
    if (focus.type === undefined || !MAPPED_TYPES.has(focus.type)) {
      this.#o.metrics.ignore('focus_unresolvable');
      return undefined;
    }
    const token = focus.system === undefined ? focus.value : `${focus.system}|${focus.value}`;
    const matches = await this.#client().search(focus.type, { identifier: token });
    if (matches.length !== 1) {
      this.#o.metrics.ignore(matches.length === 0 ? 'focus_not_found' : 'focus_ambiguous');
      return undefined;
    }
    const loc = ['fhir-server', focus.type, 'identifier'];
    const resource = ResourceSchema.safeParse(matches[0]);
    if (!resource.success) {
      throw new FhirServerUnavailableError('the FHIR server answered a search with no resource');
    }
    const found = { resource: withId(resource.data, undefined, loc), loc };
    payload.add(found, undefined);
    return found;
  }

  /**
   * Reads a resource an event names but the payload lacks (id-only). A Patient the server
   * answers 410 Gone for was deleted there: it is purged here as well.
   */
  async #fetchFocus(
    reference: string,
    payload: Payload,
    deleted: Set<string>,
  ): Promise<Resolved | undefined> {
    const parsed = parseReference(reference);
    if (parsed === undefined || !MAPPED_TYPES.has(parsed.type)) {
      this.#o.metrics.ignore('resource_type');
      return undefined;
    }
    const answer = await this.#client().readOrGone(parsed.type, parsed.id);
    if ('gone' in answer) {
      if (answer.gone === 410 && parsed.type === 'Patient') deleted.add(parsed.id);
      return undefined;
    }
    const loc = ['fhir-server', `${parsed.type}/${parsed.id}`];
    const resource = ResourceSchema.safeParse(answer.resource);
    if (!resource.success || resource.data.resourceType !== parsed.type) {
      throw new FhirServerUnavailableError('the FHIR server answered a read with another resource');
    }
    const found = { resource: withId(resource.data, undefined, loc), loc };
    payload.add(found, reference);
    return found;
  }

  /** Fetches what an event names but the payload lacks (id-only), then applies per patient. */
  async #applyEvents(
    n: SubscriptionNotification,
    payload: Payload,
    raw?: unknown,
  ): Promise<number> {
    const used = new Set<Resolved>();
    const deleted = new Set<string>();
    const perEvent: { eventNumber: number | undefined; resources: Resolved[] }[] = [];
    for (const event of n.events) {
      const resources: Resolved[] = [];
      if (event.focus === undefined && event.focusIdentifier !== undefined) {
        const found = await this.#resolveIdentifier(event.focusIdentifier, payload);
        if (found !== undefined) {
          used.add(found);
          resources.push(found);
        }
      }
      for (const reference of [event.focus, ...event.additionalContext]) {
        if (reference === undefined) continue;
        const found =
          payload.find(reference) ?? (await this.#fetchFocus(reference, payload, deleted));
        if (found === undefined) continue;
        used.add(found);
        resources.push(found);
      }
      perEvent.push({ eventNumber: event.eventNumber, resources });
    }
    // Resources of types we do not use are acknowledged and counted.
    this.#o.metrics.ignore(
      'resource_type',
      n.entries.filter(
        (e) => e.resource !== undefined && !MAPPED_TYPES.has(e.resource.resourceType),
      ).length,
    );
    for (const patientId of deleted) await this.#deletePatient(patientId);
    // Payload resources no event names (servers differ) belong to the last event.
    const rest = payload.list.filter((r) => !used.has(r));
    if (rest.length > 0) {
      if (perEvent.length === 0)
        perEvent.push({ eventNumber: n.eventsSinceSubscriptionStart, resources: [] });
      (perEvent.at(-1) as { resources: Resolved[] }).resources.push(...rest);
    }

    const sub = subscriptionHash(n.subscription);
    const patients = new Set<string>();
    // Every event is checked before the first is applied: a bad one changes nothing.
    const groupedEvents = perEvent.map((event) => ({
      eventNumber: event.eventNumber,
      grouped: this.#group(event.resources, payload),
    }));
    // Each event's receipts go under its event number (the subscription, hashed, as its sender).
    const receiptOf = (eventNumber: number | undefined) =>
      raw === undefined
        ? undefined
        : this.#o.trace?.head(
            {
              controlId: eventNumber === undefined ? '' : String(eventNumber),
              sender: { application: sub, facility: null },
              type: 'notification',
              traceId: null,
              raw: JSON.stringify(raw),
            },
            { code: '200' },
          );
    for (const event of groupedEvents) {
      const receipt = receiptOf(event.eventNumber);
      for (const [patientId, group] of event.grouped) {
        await this.#addPatientFacets(patientId, group, payload);
        const localId = await this.#localId(patientId, payload, ['body']);
        await this.#apply(
          {
            localId,
            source: 'fhir',
            eventId: `fhir:${sub}:${event.eventNumber ?? 'unnumbered'}`,
            changes: group.changes,
            kinds: [...group.kinds],
          },
          receipt,
        );
        patients.add(patientId);
      }
    }
    if (patients.size === 0 && deleted.size === 0) {
      this.#o.metrics.ignore('notification');
      if (raw !== undefined) {
        this.#o.trace?.filtered();
        for (const event of n.events) {
          await this.#o.trace?.record(receiptOf(event.eventNumber), { state: 'filtered' });
        }
      }
    }
    return patients.size;
  }

  /**
   * Events `from`..`to` were missed: counted, logged, and recovered where the server allows:
   * `$status` (logged), then `$events` for the range, whose events are applied. A recovery the
   * server cannot serve is logged and does not fail the notification that revealed the gap.
   */
  async #recover(
    n: SubscriptionNotification,
    from: number,
    to: number,
    log: Logger,
  ): Promise<{ missing: number; recovered: number; events_operation: string }> {
    this.#o.metrics.gaps.inc();
    const subscription = subscriptionHash(n.subscription);
    const missing = to - from + 1;
    log.warn({ subscription, expected: from, missing }, 'fhir subscription event gap');
    const outcome = { missing, recovered: 0, events_operation: 'not_attempted' };
    const parsed = parseReference(n.subscription);
    if (this.#o.client === undefined || parsed?.type !== 'Subscription') {
      log.warn({ subscription, ...outcome }, 'fhir event gap not recoverable: no FHIR server');
      return outcome;
    }
    try {
      const status = await this.#o.client.subscriptionStatus(parsed.id);
      const statusInfo = this.#statusOf(status);
      log.info(
        {
          subscription,
          status: statusInfo?.status,
          events_since_start: statusInfo?.eventsSinceSubscriptionStart,
        },
        'fhir subscription $status',
      );
      const events = await this.#o.client.subscriptionEvents(parsed.id, from, to);
      if (events === undefined) {
        outcome.events_operation = 'unsupported';
      } else {
        const replay = parseNotification(events, ['$events']);
        const inRange = {
          ...replay,
          events: replay.events.filter(
            (e) => e.eventNumber === undefined || (e.eventNumber >= from && e.eventNumber <= to),
          ),
        };
        const payload = this.#prepare(inRange, ['$events']);
        await this.#applyEvents(inRange, payload);
        outcome.recovered = inRange.events.length;
        outcome.events_operation = 'replayed';
      }
    } catch (error) {
      if (!(
        error instanceof FhirServerUnavailableError || error instanceof RequestValidationError
      )) {
        throw error;
      }
      outcome.events_operation = 'failed';
      log.warn(
        { subscription, ...outcome, err: { type: error.name, message: error.message } },
        'fhir event gap recovery failed',
      );
      return outcome;
    }
    log.info({ subscription, ...outcome }, 'fhir event gap recovery');
    return outcome;
  }

  /** The status resource in a `$status` answer (a Bundle of them, or one resource). */
  #statusOf(body: unknown): ReturnType<typeof parseStatusResource> | undefined {
    const b = body as { resourceType?: unknown; entry?: { resource?: unknown }[] } | null;
    const candidates =
      b?.resourceType === 'Bundle' ? (b.entry ?? []).map((e) => e.resource) : [body];
    for (const candidate of candidates) {
      const type = (candidate as { resourceType?: unknown } | null)?.resourceType;
      if (type !== 'Parameters' && type !== 'SubscriptionStatus') continue;
      try {
        return parseStatusResource(candidate, ['$status']);
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}
