import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { eventually } from '../../support/eventually.ts';
import {
  FAST_FEED_PIPELINE_LINES,
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';
import { segmentOf, sendOne } from '../hl7v2/support/hl7v2-harness.ts';

const API_KEY = 'hl7-merge-e2e-api-key';
const TOKEN = 'hl7-merge-e2e-ingest-token-0123456789';

let control = 0;
function message(type: string, ...segments: string[]): string {
  control += 1;
  return [
    `MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||${type}|MERGE-${control}|P|2.5.1`,
    ...segments,
  ].join('\r');
}
const pid = (id: string) => `PID|1||${id}^^^HOSP^MR||Doe^Jane||19500101|F`;
const problem = (id: string, code: string, instance: string) =>
  message('PPR^PC1', pid(id), `PRB|AD|20260101120000|${code}^Problem^I10|${instance}`);

describe('HL7 merges end to end (concordance-worker start + simulator): the retired id gets no further queries', () => {
  let p: PipelineProcesses;

  beforeAll(async () => {
    p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      configLines: [...FAST_FEED_PIPELINE_LINES],
    });
  });
  afterAll(() => p.close());

  const eventsOf = (events: ResultEvent[], patientId: string) =>
    events.filter((e) => e.patient_id === patientId);
  const submissions = async () =>
    (await p.requests()).filter((r) => r.method === 'POST' && r.path === '/v1/concordance');

  for (const trigger of ['A40', 'A18'] as const) {
    it(`ADT^${trigger}: record and presets move to the survivor; a later update of the retired id runs only the survivor's queries`, async () => {
      const prior = `HOSP|OLD-${trigger}`;
      const survivor = `HOSP|NEW-${trigger}`;
      const send = async (text: string) => {
        const ack = await sendOne(p.mllpPort, text);
        expect(segmentOf(ack ?? '', 'MSA')[1]).toBe('AA');
      };

      await send(problem(`OLD-${trigger}`, 'E11.9', 'P-1'));
      const before = await eventually(
        async () => eventsOf(await p.delivered(), prior),
        (events) => events.length === 1,
        { timeoutMs: 30_000 },
      );
      expect(before[0]).toMatchObject({ status: 'completed', ccsr_category: 'END002' });
      const priorPsid = before[0]?.patient_service_id;

      await send(message(`ADT^${trigger}`, pid(`NEW-${trigger}`), `MRG|OLD-${trigger}^^^HOSP^MR`));
      // The survivor took the presets over: its END002 runs on the merged record.
      await eventually(
        async () => eventsOf(await p.delivered(), survivor),
        (events) => events.some((e) => e.ccsr_category === 'END002' && e.status === 'completed'),
        { timeoutMs: 30_000 },
      );

      // A late problem sent under the retired id: CIR007 runs for the survivor. Any query it opened
      // is due at the same time as that one; wait until every submission the service saw has
      // become a delivered result, so that nothing is still on its way.
      await send(problem(`OLD-${trigger}`, 'I10', 'P-2'));
      const { events: after, submitted } = await eventually(
        async () => ({ events: await p.delivered(), submitted: (await submissions()).length }),
        ({ events, submitted: n }) =>
          events.length === n &&
          eventsOf(events, survivor).some(
            (e) => e.ccsr_category === 'CIR007' && e.status === 'completed',
          ),
        { timeoutMs: 30_000 },
      );
      expect(submitted).toBe(after.length);
      expect(eventsOf(after, survivor).every((e) => e.patient_service_id !== priorPsid)).toBe(true);
      // The retired id: still the one result from before the merge, nothing since.
      expect(eventsOf(after, prior)).toHaveLength(1);
      expect(after.filter((e) => e.patient_service_id === priorPsid)).toHaveLength(1);
    });
  }
});
