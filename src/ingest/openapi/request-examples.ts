/**
 * The requests the OpenAPI description shows, one per operation and media type. Invented data, no
 * real patient. Sent in the document's order they are a walk through the API that every route
 * answers with success (test/integration/ingest/openapi.test.ts sends each to a real app): the
 * record update makes the patient the presets and administration examples name.
 */

/** The hospital's patient id of the examples. */
export const EXAMPLE_PATIENT_ID = 'MRN-000123';

/** A CCSR v2023.1 category (diabetes mellitus without complication). */
export const EXAMPLE_CCSR_CATEGORY = 'END002';

const ICD10CM = 'http://hl7.org/fhir/sid/icd-10-cm';
const LOINC = 'http://loinc.org';

function assembledPatient(age: number) {
  return {
    demographics: { age, gender: 'female' },
    nodes: [
      {
        id: 'n1',
        node_type: 'condition',
        notable: true,
        fhir_id: 'Condition/c-1',
        coding: [{ system: ICD10CM, code: 'E11.9', display: 'Type 2 diabetes mellitus' }],
      },
      {
        id: 'n2',
        node_type: 'observation',
        notable: false,
        coding: [{ system: LOINC, code: '4548-4', display: 'Hemoglobin A1c' }],
        metadata: { value: 7.2, unit: '%' },
      },
    ],
    relationships: [{ source_id: 'n2', target_id: 'n1', relationship_type: 'evidence_for' }],
  };
}

/** `POST /v1/record-updates`. */
export const RECORD_UPDATE_EXAMPLE = {
  patient_id: EXAMPLE_PATIENT_ID,
  event_id: 'adt-2026-0001',
  occurred_at: '2026-03-01T09:30:00Z',
  source: 'ehr-adt',
  changes: ['Condition', 'Observation'],
  ccsr_categories: [EXAMPLE_CCSR_CATEGORY],
  assembled_patient: assembledPatient(57),
};

const BATCH_ITEMS = [
  {
    patient_id: 'MRN-000124',
    event_id: 'replay-2026-0001',
    source: 'ehr-replay',
    assembled_patient: assembledPatient(63),
  },
  {
    patient_id: 'MRN-000125',
    event_id: 'replay-2026-0002',
    source: 'ehr-replay',
    changes: ['Observation'],
    assembled_patient: assembledPatient(48),
  },
];

/** `POST /v1/record-updates/batch` as a JSON array. */
export const RECORD_BATCH_EXAMPLE = BATCH_ITEMS;

/** The same batch as NDJSON: one update per line. */
export const RECORD_BATCH_NDJSON_EXAMPLE = `${BATCH_ITEMS.map((item) => JSON.stringify(item)).join('\n')}\n`;

const FHIR_BASE = 'https://ehr.example.org/fhir';

const coded = (system: string, code: string, display?: string) => ({
  coding: [{ system, code, ...(display === undefined ? {} : { display }) }],
});

const TERMINOLOGY = 'http://terminology.hl7.org/CodeSystem';

/** A confirmed, active problem-list Condition of `patient`. */
function fhirCondition(id: string, patient: string) {
  return {
    resourceType: 'Condition',
    id,
    clinicalStatus: coded(`${TERMINOLOGY}/condition-clinical`, 'active'),
    verificationStatus: coded(`${TERMINOLOGY}/condition-ver-status`, 'confirmed'),
    category: [coded(`${TERMINOLOGY}/condition-category`, 'problem-list-item')],
    code: coded(ICD10CM, 'E11.9', 'Type 2 diabetes mellitus'),
    subject: { reference: `Patient/${patient}` },
    onsetDateTime: '2025-11-02',
  };
}

/** `POST /v1/fhir/notifications`: an R4 backport event notification carrying its resource. */
export const FHIR_NOTIFICATION_EXAMPLE = {
  resourceType: 'Bundle',
  type: 'history',
  timestamp: '2026-03-01T09:30:00Z',
  entry: [
    {
      fullUrl: 'urn:uuid:0e5c3f0a-52a4-4c4e-9d7e-6f2d1c000001',
      resource: {
        resourceType: 'Parameters',
        parameter: [
          {
            name: 'subscription',
            valueReference: { reference: `${FHIR_BASE}/Subscription/sub-1` },
          },
          { name: 'topic', valueCanonical: 'http://example.org/topics/problem-list' },
          { name: 'status', valueCode: 'active' },
          { name: 'type', valueCode: 'event-notification' },
          { name: 'events-since-subscription-start', valueString: '1' },
          {
            name: 'notification-event',
            part: [
              { name: 'event-number', valueString: '1' },
              { name: 'focus', valueReference: { reference: `${FHIR_BASE}/Condition/c-301` } },
            ],
          },
        ],
      },
    },
    { fullUrl: `${FHIR_BASE}/Condition/c-301`, resource: fhirCondition('c-301', 'pat-301') },
  ],
};

/** `POST /v1/fhir/Bundle`: one patient's record. */
export const FHIR_BUNDLE_EXAMPLE = {
  resourceType: 'Bundle',
  type: 'collection',
  entry: [
    {
      fullUrl: `${FHIR_BASE}/Patient/pat-201`,
      resource: {
        resourceType: 'Patient',
        id: 'pat-201',
        gender: 'male',
        birthDate: '1961-05-14',
      },
    },
    { fullUrl: `${FHIR_BASE}/Condition/c-201`, resource: fhirCondition('c-201', 'pat-201') },
  ],
};

/** A rest-hook subscription's name (`fhir.rest_hooks[].name`). */
export const EXAMPLE_REST_HOOK = 'problems';

/** `POST /v1/fhir/rest-hook/{name}` with a body, and `PUT …/Condition/c-401`. */
export const REST_HOOK_CONDITION = fhirCondition('c-401', 'pat-401');

/** `DELETE /v1/fhir/rest-hook/{name}/Patient/pat-401`: the patient the rest-hook examples made. */
export const REST_HOOK_DELETED_PATIENT = 'pat-401';

/** `POST /v1/hl7v2`: an ADT^A08 (update patient information) with a diagnosis. */
export const HL7V2_EXAMPLE = [
  'MSH|^~\\&|EHR|GENERAL HOSPITAL|CONCORDANCE|CW|20260301093000||ADT^A08^ADT_A01|MSG-000501|P|2.5.1',
  'EVN|A08|20260301093000',
  'PID|1||MRN-000501^^^HOSP^MR||EXAMPLE^PATIENT||19700412|F',
  'DG1|1||E11.9^Type 2 diabetes mellitus^I10||20260301|F',
  '',
].join('\r');
