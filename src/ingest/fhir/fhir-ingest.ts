import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { toValidationItems } from '../../interface/validation-error.ts';
import type { ClinicalChange, ReportedItem } from '../../records/clinical-change.ts';
import type { PatientIdentityFacets } from '../../records/clinical-record.ts';
import { RequestValidationError } from '../errors/request-validation-error.ts';
import type { EventTracker } from './event-tracker.ts';
import { subscriptionHash } from './event-tracker.ts';
import type { FhirClient } from './fhir-client.ts';
import { FhirServerUnavailableError } from './fhir-errors.ts';
import type { FhirMetrics } from './fhir-metrics.ts';
import { parseReference, ResourceSchema, type FhirResource } from './fhir-resource.ts';
import { MAPPED_TYPES, mapClinicalResource, parsePatient, patientFacets } from './map-resource.ts';
import {
  parseNotification,
  parseStatusResource,
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
  }): Promise<{ patientServiceId: string; version: number; changed: boolean }>;
}

export interface FhirIngestOptions {
  updates: ClinicalUpdater;
  tracker: EventTracker;
  /** Undefined when `fhir.base_url` is not set: id-only payloads then cannot be fetched. */
  client: FhirClient | undefined;
  /** `fhir.patient_identifier_system`: null = the Patient's logical id is the local id. */
  patientIdentifierSystem: string | null;
  metrics: FhirMetrics;
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
}

/** A log-safe account of a notification: counts and kinds, never contents or ids. */
export interface NotificationSummary {
  bundle_type: 'history';
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

const WholeBundleSchema = z.looseObject({
  resourceType: z.literal('Bundle'),
  id: z.string().optional(),
  type: z.enum(['transaction', 'collection', 'batch', 'searchset'], {
    error: 'a whole-patient Bundle is a transaction, batch, collection or searchset',
  }),
  entry: z
    .array(z.looseObject({ fullUrl: z.string().optional(), resource: ResourceSchema }))
    .min(1),
});

function invalid(loc: Loc, msg: string, type = 'value_error'): RequestValidationError {
  return new RequestValidationError([{ loc: [...loc], msg, type }]);
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
    const system = this.#o.patientIdentifierSystem;
    if (system === null) return patientId;
    let patient: unknown = payload.find(`Patient/${patientId}`)?.resource;
    if (patient === undefined) {
      patient = await this.#client().read('Patient', patientId);
      if (patient === undefined)
        throw invalid(loc, 'the subject Patient does not exist on the FHIR server');
    }
    const parsed = parsePatient(patient, loc);
    const value = parsed.identifier?.find((i) => i.system === system && i.value)?.value;
    if (value === undefined) {
      throw invalid(
        loc,
        'the Patient has no identifier of the configured system (fhir.patient_identifier_system)',
      );
    }
    return value;
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

  // ---- whole-patient Bundle ------------------------------------------------------------------

  /** A whole-patient Bundle: replaces that patient's record. */
  async replaceFromBundle(
    body: unknown,
  ): Promise<{ patientServiceId: string; version: number; resources: number; items: number }> {
    const parsed = WholeBundleSchema.safeParse(body);
    if (!parsed.success) {
      throw new RequestValidationError(toValidationItems(parsed.error.issues, ['body']));
    }
    const payload = new Payload();
    parsed.data.entry.forEach((e, i) => {
      const loc = ['body', 'entry', i, 'resource'];
      payload.add({ resource: withId(e.resource, e.fullUrl, loc), loc }, e.fullUrl);
    });
    const patients = payload.list.filter((r) => r.resource.resourceType === 'Patient');
    if (patients.length !== 1) {
      throw invalid(['body', 'entry'], 'a whole-patient Bundle holds exactly one Patient');
    }
    const grouped = this.#group(payload.list, payload);
    const patient = patients[0] as Resolved;
    if (grouped.size !== 1 || !grouped.has(patient.resource.id)) {
      throw invalid(['body', 'entry'], "every resource must be about the Bundle's Patient");
    }
    const group = grouped.get(patient.resource.id) as PatientChanges;
    const items: ReportedItem[] = [];
    let facets: Partial<PatientIdentityFacets> = {};
    for (const change of group.changes) {
      if (change.type === 'upsert') items.push(change.item);
      else if (change.type === 'patient') facets = change.facets;
    }
    const localId = await this.#localId(patient.resource.id, payload, patient.loc);
    const eventId = `fhir:bundle:${parsed.data.id ?? createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 32)}`;
    const result = await this.#o.updates.apply({
      localId,
      source: 'fhir',
      eventId,
      changes: [{ type: 'replace', items, facets }],
      kinds: [...group.kinds],
    });
    return {
      patientServiceId: result.patientServiceId,
      version: result.version,
      resources: payload.list.length,
      items: items.length,
    };
  }

  // ---- notifications -------------------------------------------------------------------------

  async handleNotification(body: unknown, log: Logger): Promise<NotificationSummary> {
    const n = parseNotification(body);
    const summary: NotificationSummary = {
      bundle_type: 'history',
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
        summary.patients = await this.#applyEvents(n, prepared);
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

  /** Fetches what an event names but the payload lacks (id-only), then applies per patient. */
  async #applyEvents(n: SubscriptionNotification, payload: Payload): Promise<number> {
    const used = new Set<Resolved>();
    const perEvent: { eventNumber: number | undefined; resources: Resolved[] }[] = [];
    for (const event of n.events) {
      const resources: Resolved[] = [];
      for (const reference of [event.focus, ...event.additionalContext]) {
        if (reference === undefined) continue;
        let found = payload.find(reference);
        if (found === undefined) {
          const parsed = parseReference(reference);
          if (parsed === undefined || !MAPPED_TYPES.has(parsed.type)) continue;
          const fetched = await this.#client().read(parsed.type, parsed.id);
          if (fetched === undefined) continue;
          const loc = ['fhir-server', `${parsed.type}/${parsed.id}`];
          const resource = ResourceSchema.safeParse(fetched);
          if (!resource.success || resource.data.resourceType !== parsed.type) {
            throw new FhirServerUnavailableError(
              'the FHIR server answered a read with another resource',
            );
          }
          found = { resource: withId(resource.data, undefined, loc), loc };
          payload.add(found, reference);
        }
        used.add(found);
        resources.push(found);
      }
      perEvent.push({ eventNumber: event.eventNumber, resources });
    }
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
    for (const event of groupedEvents) {
      for (const [patientId, group] of event.grouped) {
        await this.#addPatientFacets(patientId, group, payload);
        const localId = await this.#localId(patientId, payload, ['body']);
        await this.#o.updates.apply({
          localId,
          source: 'fhir',
          eventId: `fhir:${sub}:${event.eventNumber ?? 'unnumbered'}`,
          changes: group.changes,
          kinds: [...group.kinds],
        });
        patients.add(patientId);
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
