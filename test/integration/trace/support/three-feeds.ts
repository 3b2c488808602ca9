import { expect } from 'vitest';
import { Partitions } from '../../../../src/queues/partitions.ts';
import type { RedisClient } from '../../../../src/queues/redis-client.ts';
import { MessageTraceReader } from '../../../../src/trace/message-trace-reader.ts';
import {
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../../support/pipeline-processes.ts';
import { testPartitions } from '../../../support/redis.ts';
import { condition, r4Notification } from '../../fhir/support/notifications.ts';
import { segmentOf, sendOne } from '../../hl7v2/support/hl7v2-harness.ts';

/** The pipeline settings both end-to-end trace tests run with: quick queries, one END002 preset. */
const THREE_FEEDS_CONFIG_LINES = [
  'queries:',
  '  debounce_ms: 200',
  '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
  'presets:',
  '  rules: [{ ccsr_category: END002 }]',
  '  from_problem_list: { enabled: false, categories: outpatient_default }',
];

/** One update per feed: identifiers planted in each, and each message's control id. */
export interface ThreeFeeds {
  control: { hl7: string; fhir: string; json: string };
  hl7Mrn: string;
  hl7Name: string;
  fhirPatient: string;
  jsonPatient: string;
  /** Ages in whole years: the HL7 patient's, the FHIR patient's and the JSON update's. */
  ages: { hl7: number; fhir: number; json: number };
  /** Names the FHIR subscription (`sub-<tag>`) and its Condition (`<tag>-c1`). */
  tag: string;
  /** Planted free text: an NTE segment of the ADT, the display of the JSON update's coding. */
  note?: string;
  /** The engine's `traceparent` header on the JSON update. */
  traceparent?: string;
}

/** The identifiers (and free text) planted in the three messages. */
export function plantedIn(feeds: ThreeFeeds): string[] {
  const { hl7Mrn, hl7Name, fhirPatient, jsonPatient, note } = feeds;
  return [hl7Mrn, hl7Name, fhirPatient, jsonPatient, ...(note === undefined ? [] : [note])];
}

/**
 * `concordance-worker start` and the local service (100-200 ms), with {@link
 * THREE_FEEDS_CONFIG_LINES} and `env` on top; the reader of its message traces.
 */
export async function startThreeFeedsPipeline(options: {
  apiKey: string;
  token: string;
  env: Record<string, string>;
}): Promise<{ p: PipelineProcesses; reader: MessageTraceReader }> {
  const p = await startPipelineProcesses({
    ...options,
    latency: '100-200',
    configLines: THREE_FEEDS_CONFIG_LINES,
  });
  const reader = new MessageTraceReader({
    redis: p.redis,
    space: new Partitions(p.prefix, testPartitions()),
  });
  return { p, reader };
}

function adtWithDg1(feeds: ThreeFeeds): string {
  const born = `${new Date().getUTCFullYear() - feeds.ages.hl7}0412`;
  return [
    `MSH|^~\\&|EPIC|MAINHOSP|CW|MAINHOSP|20261120080000||ADT^A08^ADT_A01|${feeds.control.hl7}|P|2.5.1`,
    'EVN|A08|20261120080000',
    `PID|1||${feeds.hl7Mrn}^^^HOSP^MR||${feeds.hl7Name}^Ada||${born}|F`,
    ...(feeds.note === undefined ? [] : [`NTE|1||${feeds.note}`]),
    'DG1|1||E11.9^Type 2 diabetes mellitus without complications^I10||20260101|F',
  ].join('\r');
}

/**
 * Sends an HL7 ADT with a DG1 over MLLP, a FHIR notification and a JSON update, each with a
 * diabetes diagnosis (END002), and checks each was accepted (AA, 200, 202).
 */
export async function sendThreeFeeds(
  to: Pick<PipelineProcesses, 'mllpPort' | 'ingestUrl' | 'token'>,
  feeds: ThreeFeeds,
): Promise<void> {
  const { control } = feeds;
  const ack = await sendOne(to.mllpPort, adtWithDg1(feeds));
  expect(segmentOf(ack ?? '', 'MSA').slice(1, 3)).toEqual(['AA', control.hl7]);

  const condId = `${feeds.tag}-c1`;
  const note = await fetch(`${to.ingestUrl}/v1/fhir/notifications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${to.token}`, 'content-type': 'application/fhir+json' },
    body: JSON.stringify(
      r4Notification({
        subscription: `https://ehr.example.org/fhir/Subscription/sub-${feeds.tag}`,
        type: 'event-notification',
        eventsSince: Number(control.fhir),
        events: [{ n: Number(control.fhir), focus: `Condition/${condId}` }],
        resources: [
          {
            resourceType: 'Patient',
            id: feeds.fhirPatient,
            gender: 'male',
            birthDate: `${new Date().getUTCFullYear() - feeds.ages.fhir}-02-11`,
          },
          condition(condId, feeds.fhirPatient),
        ],
      }),
    ),
  });
  expect(note.status).toBe(200);

  const json = await fetch(`${to.ingestUrl}/v1/record-updates`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${to.token}`,
      'content-type': 'application/json',
      ...(feeds.traceparent === undefined ? {} : { traceparent: feeds.traceparent }),
    },
    body: JSON.stringify({
      patient_id: feeds.jsonPatient,
      event_id: control.json,
      source: 'mirth',
      assembled_patient: {
        nodes: [
          {
            id: 'c1',
            node_type: 'condition',
            notable: true,
            coding: [
              {
                system: 'http://hl7.org/fhir/sid/icd-10-cm',
                code: 'E11.9',
                ...(feeds.note === undefined ? {} : { display: feeds.note }),
              },
            ],
          },
        ],
        relationships: [],
        demographics: { age: feeds.ages.json, gender: 'female' },
      },
    }),
  });
  expect(json.status).toBe(202);
}

/** A trace entry at rest as text (a list's items, a hash's fields, a sorted set's members). */
export async function traceEntryText(redis: RedisClient, key: string): Promise<string> {
  const type = await redis.type(key);
  return type === 'list'
    ? (await redis.lrange(key, '0', '-1')).join('\n')
    : type === 'hash'
      ? JSON.stringify(await redis.hgetall(key))
      : JSON.stringify(await redis.zrange(key, '0', '-1'));
}
