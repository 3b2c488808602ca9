import type { ReceivedAttempt, ReceivedEvent } from '../../tools/webhook-receiver.ts';
import type { SentUpdate } from './sender.ts';
import { CATEGORY, type Feed } from './updates.ts';

/** A fault window: from when it began to when it was lifted (epoch ms). */
export interface FaultWindow {
  what: string;
  start: number;
  end: number;
}

/** A request as the local service logged it (only what the figures need). */
export interface ServiceRequest {
  method: string;
  path: string;
  status: number | null;
  body: unknown;
}

/** The figures every scenario prints (see docs/development.md, "The chaos suite"). */
export interface Figures {
  /** Updates the sender had to deliver (each must be acknowledged and reflected in a result). */
  sent: number;
  /** Requests or MLLP exchanges, resends included. */
  send_attempts: number;
  /** What those attempts got: `202`, `503`, `AA`, `closed` (MLLP without ACK), `timeout`, … */
  answers: Record<string, number>;
  acknowledged: number;
  /** Updates never acknowledged before the sender gave up (required ones: a failure). */
  unacknowledged: number;
  /** Valid updates the ingester refused for good (4xx, AE): a failure too. */
  rejected: number;
  /** Distinct queries whose delivered result event says `completed`. */
  completed: number;
  /** Delivered result events by `status`. */
  events_by_status: Record<string, number>;
  /** Distinct webhook-ids received with a valid signature and acknowledged 2xx. */
  delivered: number;
  /**
   * Acknowledged updates that no delivered result reflects: no delivered event of the patient's
   * END002 query names, in `triggered_by.event_ids`, this update or a later update of the same
   * patient (a later query reads the newer record, which includes this update's change).
   */
  lost: number;
  lost_by_feed: Record<Feed, number>;
  /**
   * From an update's acknowledgement to the first delivered result reflecting it (the same rule as
   * `lost`), over the reflected updates: median, 99th percentile and maximum, in ms.
   */
  reflected_after_ms: { p50: number | null; p99: number | null; max: number | null };
  /** Up to five lost event ids, for looking them up. */
  lost_examples: string[];
  /** Submissions the service accepted (POST /v1/concordance answered 2xx). */
  submissions: number;
  /** Accepted submissions minus distinct submission bodies (the same record and category again). */
  duplicate_submissions: number;
  /** Verified 2xx deliveries of a webhook-id already delivered (the receiver saw it twice). */
  duplicate_deliveries: number;
  /** Delivery attempts the receiver answered with a non-2xx (each is retried by the sender). */
  failed_delivery_attempts: number;
  /** Requests whose signature did not verify (must be 0). */
  unverified_deliveries: number;
  /**
   * From the end of each fault to the first acknowledged update (`ingest`) and the first delivered
   * event (`delivery`) after it; the worst over the scenario's faults, in ms (null: none after it).
   */
  time_to_recover_ms: {
    ingest: number | null;
    delivery: number | null;
    /**
     * From the end of the last fault to the delivery of the last event the receiver had refused
     * at least once (how long the held-back backlog took; null when nothing was refused).
     */
    delivery_backlog: number | null;
  };
  faults: { what: string; start_ms: number; duration_ms: number }[];
  duration_ms: number;
}

interface EventPayload {
  id?: string;
  status?: string;
  patient_id?: string | null;
  ccsr_category?: string;
  triggered_by?: { event_ids?: string[] };
}

function firstAfter(times: readonly number[], after: number): number | null {
  let best: number | null = null;
  for (const t of times) if (t >= after && (best === null || t < best)) best = t;
  return best === null ? null : best - after;
}

function worst(values: (number | null)[]): number | null {
  if (values.length === 0) return null;
  if (values.some((v) => v === null)) return null;
  return Math.max(...(values as number[]));
}

/** Nearest-rank percentile (null for no values). */
function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? null;
}

function sumAnswers(sent: readonly SentUpdate[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const s of sent)
    for (const [answer, n] of Object.entries(s.answers)) total[answer] = (total[answer] ?? 0) + n;
  return total;
}

/** Computes the figures of one scenario from what the sender, receiver and service saw. */
export function computeFigures(input: {
  sent: readonly SentUpdate[];
  events: readonly ReceivedEvent[];
  attempts: readonly ReceivedAttempt[];
  serviceRequests: readonly ServiceRequest[];
  faults: readonly FaultWindow[];
  startedAt: number;
  endedAt: number;
}): Figures {
  const { sent, events, attempts, serviceRequests, faults } = input;

  // Delivered events, one per webhook-id (the first verified 2xx).
  const byId = new Map<string, EventPayload>();
  for (const event of events) {
    if (!byId.has(event.webhookId)) byId.set(event.webhookId, event.payload as EventPayload);
  }
  const eventsByStatus: Record<string, number> = {};
  const reflected = new Map<string, Set<string>>(); // patient_id -> event ids named by its results
  const firstNamedAt = new Map<string, number>(); // event id -> when a result first named it
  for (const event of events) {
    const payload = event.payload as EventPayload;
    if (payload.ccsr_category !== CATEGORY) continue;
    for (const id of payload.triggered_by?.event_ids ?? []) {
      const seen = firstNamedAt.get(id);
      if (seen === undefined || event.receivedAt < seen) firstNamedAt.set(id, event.receivedAt);
    }
  }
  for (const payload of byId.values()) {
    const status = payload.status ?? 'unknown';
    eventsByStatus[status] = (eventsByStatus[status] ?? 0) + 1;
    if (payload.ccsr_category !== CATEGORY || typeof payload.patient_id !== 'string') continue;
    let ids = reflected.get(payload.patient_id);
    if (!ids) reflected.set(payload.patient_id, (ids = new Set()));
    for (const id of payload.triggered_by?.event_ids ?? []) ids.add(id);
  }

  const byPatient = new Map<string, SentUpdate[]>();
  for (const s of sent) {
    const list = byPatient.get(s.update.patientId) ?? [];
    list.push(s);
    byPatient.set(s.update.patientId, list);
  }
  const lostByFeed: Record<Feed, number> = { json: 0, hl7: 0, fhir: 0 };
  const lostExamples: string[] = [];
  let lost = 0;
  const lags: number[] = [];
  for (const [patientId, list] of byPatient) {
    const ids = reflected.get(patientId) ?? new Set<string>();
    for (const s of list) {
      if (s.ackedAt === undefined) continue;
      const covering = list.filter(
        (o) => o.update.seq >= s.update.seq && ids.has(o.update.eventId),
      );
      if (covering.length > 0) {
        const at = Math.min(...covering.map((o) => firstNamedAt.get(o.update.eventId) ?? Infinity));
        if (Number.isFinite(at)) lags.push(Math.max(0, at - s.ackedAt));
        continue;
      }
      lost++;
      lostByFeed[s.update.feed]++;
      if (lostExamples.length < 5) lostExamples.push(s.update.eventId);
    }
  }

  const accepted = serviceRequests.filter(
    (r) =>
      r.method === 'POST' &&
      r.path.split('?')[0] === '/v1/concordance' &&
      r.status !== null &&
      r.status >= 200 &&
      r.status < 300,
  );
  const distinctBodies = new Set(accepted.map((r) => JSON.stringify(r.body)));

  const okPerId = new Map<string, number>();
  let failedAttempts = 0;
  let unverified = 0;
  for (const a of attempts) {
    if (!a.verified) {
      unverified++;
      continue;
    }
    if (a.status >= 200 && a.status < 300)
      okPerId.set(a.webhookId, (okPerId.get(a.webhookId) ?? 0) + 1);
    else failedAttempts++;
  }
  let duplicateDeliveries = 0;
  for (const count of okPerId.values()) duplicateDeliveries += count - 1;

  const refused = new Set(
    attempts
      .filter((a) => a.verified && (a.status < 200 || a.status >= 300))
      .map((a) => a.webhookId),
  );
  const lastFaultEnd = faults.length === 0 ? null : Math.max(...faults.map((f) => f.end));
  const backlogTimes = events.filter((e) => refused.has(e.webhookId)).map((e) => e.receivedAt);
  const backlog =
    lastFaultEnd === null || backlogTimes.length === 0
      ? null
      : Math.max(...backlogTimes) - lastFaultEnd;

  const ackTimes = sent.flatMap((s) => (s.ackedAt === undefined ? [] : [s.ackedAt]));
  const eventTimes = events.map((e) => e.receivedAt);

  return {
    sent: sent.length,
    send_attempts: sent.reduce((sum, s) => sum + s.attempts, 0),
    answers: sumAnswers(sent),
    acknowledged: ackTimes.length,
    unacknowledged: sent.filter((s) => s.ackedAt === undefined && s.rejected === undefined).length,
    rejected: sent.filter((s) => s.rejected !== undefined).length,
    completed: eventsByStatus.completed ?? 0,
    events_by_status: eventsByStatus,
    delivered: byId.size,
    lost,
    lost_by_feed: lostByFeed,
    reflected_after_ms: {
      p50: percentile(lags, 0.5),
      p99: percentile(lags, 0.99),
      max: lags.length === 0 ? null : Math.max(...lags),
    },
    lost_examples: lostExamples,
    submissions: accepted.length,
    duplicate_submissions: accepted.length - distinctBodies.size,
    duplicate_deliveries: duplicateDeliveries,
    failed_delivery_attempts: failedAttempts,
    unverified_deliveries: unverified,
    time_to_recover_ms: {
      ingest: worst(faults.map((f) => firstAfter(ackTimes, f.end))),
      delivery: worst(faults.map((f) => firstAfter(eventTimes, f.end))),
      delivery_backlog: backlog,
    },
    faults: faults.map((f) => ({
      what: f.what,
      start_ms: f.start - input.startedAt,
      duration_ms: f.end - f.start,
    })),
    duration_ms: input.endedAt - input.startedAt,
  };
}
