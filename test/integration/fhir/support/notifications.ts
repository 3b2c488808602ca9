import { readFileSync } from 'node:fs';
import { PUBLIC_FIXTURES } from '../../../support/public-fixtures.ts';

export const FIXTURES = `${PUBLIC_FIXTURES}fhir`;

export function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${FIXTURES}/${name}`, 'utf8')) as Record<string, unknown>;
}

export interface NoteEvent {
  n: number;
  /** `Type/id`. */
  focus: string;
}

/** An R4 backport notification Bundle (`Parameters` status). */
export function r4Notification(options: {
  subscription: string;
  type: string;
  eventsSince?: number;
  events?: NoteEvent[];
  /** Full resources to include as entries (omit for id-only). */
  resources?: Record<string, unknown>[];
  /** Base URL for the focus references. */
  base?: string;
}): Record<string, unknown> {
  const base = options.base ?? 'https://ehr.example.org/fhir';
  const events = options.events ?? [];
  return {
    resourceType: 'Bundle',
    type: 'history',
    timestamp: '2026-01-01T10:00:00Z',
    entry: [
      {
        fullUrl: 'urn:uuid:7d9b1d3c-1a64-4c51-9d1e-000000000001',
        resource: {
          resourceType: 'Parameters',
          parameter: [
            { name: 'subscription', valueReference: { reference: options.subscription } },
            { name: 'topic', valueCanonical: 'http://example.org/topics/clinical-change' },
            { name: 'status', valueCode: 'active' },
            { name: 'type', valueCode: options.type },
            ...(options.eventsSince === undefined
              ? []
              : [
                  {
                    name: 'events-since-subscription-start',
                    valueString: String(options.eventsSince),
                  },
                ]),
            ...events.map((e) => ({
              name: 'notification-event',
              part: [
                { name: 'event-number', valueString: String(e.n) },
                { name: 'timestamp', valueInstant: '2026-01-01T10:00:00Z' },
                { name: 'focus', valueReference: { reference: `${base}/${e.focus}` } },
              ],
            })),
          ],
        },
      },
      ...(options.resources === undefined
        ? events.map((e) => ({ fullUrl: `${base}/${e.focus}` }))
        : options.resources.map((r) => ({
            fullUrl: `${base}/${String(r.resourceType)}/${String(r.id)}`,
            resource: r,
          }))),
    ],
  };
}

/** An R4B/R5 notification Bundle (`SubscriptionStatus`). */
export function r5Notification(options: {
  subscription: string;
  type: string;
  eventsSince: number;
  events: NoteEvent[];
  resources: Record<string, unknown>[];
}): Record<string, unknown> {
  const base = 'https://ehr.example.org/fhir';
  return {
    resourceType: 'Bundle',
    type: 'history',
    entry: [
      {
        resource: {
          resourceType: 'SubscriptionStatus',
          status: 'active',
          type: options.type,
          eventsSinceSubscriptionStart: String(options.eventsSince),
          notificationEvent: options.events.map((e) => ({
            eventNumber: String(e.n),
            focus: { reference: `${base}/${e.focus}` },
          })),
          subscription: { reference: options.subscription },
          topic: 'http://example.org/topics/clinical-change',
        },
      },
      ...options.resources.map((r) => ({
        fullUrl: `${base}/${String(r.resourceType)}/${String(r.id)}`,
        resource: r,
      })),
    ],
  };
}

export function condition(id: string, patientId: string, extra: Record<string, unknown> = {}) {
  return {
    resourceType: 'Condition',
    id,
    text: { status: 'generated', div: '<div>Narrative for the patient: Zanzibar Quixote</div>' },
    clinicalStatus: {
      coding: [
        { system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' },
      ],
    },
    category: [
      {
        coding: [
          {
            system: 'http://terminology.hl7.org/CodeSystem/condition-category',
            code: 'problem-list-item',
          },
        ],
      },
    ],
    code: {
      coding: [
        {
          system: 'http://hl7.org/fhir/sid/icd-10-cm',
          code: 'E11.9',
          display: 'Type 2 diabetes mellitus without complications',
        },
        { system: 'http://snomed.info/sct', code: '44054006' },
      ],
      text: 'Diabetes (free text)',
    },
    subject: { reference: `Patient/${patientId}` },
    onsetDateTime: '2020-03-04',
    ...extra,
  };
}

export function hba1c(id: string, patientId: string, value: number) {
  return {
    resourceType: 'Observation',
    id,
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' }] },
    subject: { reference: `Patient/${patientId}` },
    effectiveDateTime: '2025-12-01T09:00:00Z',
    valueQuantity: { value, unit: '%', system: 'http://unitsofmeasure.org', code: '%' },
    interpretation: [{ coding: [{ code: 'H' }] }],
    referenceRange: [{ low: { value: 4 }, high: { value: 5.6 } }],
    note: [{ text: 'secret note text' }],
  };
}
