import { afterEach, describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../../../src/delivery/dead-letter-store.ts';
import { deriveCrosswalkKeys } from '../../../src/identity/crosswalk-keys.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import {
  startPipelineWithWebhook,
  type PipelineWithWebhook,
} from '../../support/pipeline-webhook.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';

/** One planted local id per way an event can rest: delivered, waiting for retry, dead-lettered. */
const DELIVERED = 'MRN-PLANTED-DELIVERED-5501';
const PENDING = 'MRN-PLANTED-PENDING-5502';
const DEAD = 'MRN-PLANTED-DEAD-5503';
const PLANTED = [DELIVERED, PENDING, DEAD];

describe('nothing identifying at rest', () => {
  let pipeline: PipelineWithWebhook | undefined;
  afterEach(() => pipeline?.close());

  it('after a run through both channels, no planted local id is anywhere in Redis in plain text', async () => {
    // The receiver answers by patient: 204, 503 for ever (the event stays pending), or 410.
    const psidOf = new Map<string, string>();
    // The delivery side as `work` builds it, with this test's webhook.
    const webhook = (pipeline = await startPipelineWithWebhook({
      respond: (attempt) => {
        const body = JSON.parse(attempt.rawBody) as { patient_id: string };
        return body.patient_id === PENDING ? 503 : body.patient_id === DEAD ? 410 : 204;
      },
    }));
    const h = webhook.harness;
    const r = webhook.receiver;
    const keys = deriveCrosswalkKeys(h.secret);
    // One dead-letter store per partition (one without partitions).
    const deadLetters = h.partitions.prefixes.map(
      (prefix) => new DeadLetterStore({ redis: h.redis, prefix, keys }),
    );
    await h.startWorker(undefined, undefined, webhook.router);

    for (const [i, localId] of PLANTED.entries()) {
      const { patientServiceId } = await h.update(
        localId,
        ['END002'],
        sampleRecord(`planted-${i}`),
        `ev-planted-${i}`,
      );
      psidOf.set(localId, patientServiceId);
    }
    await h.untilOutcomes(PLANTED.length);
    const idOf = (localId: string) =>
      h.outcomes.find((o) => o.data.patientServiceId === psidOf.get(localId))?.result;
    expect(PLANTED.map(idOf).every((result) => result !== undefined)).toBe(true);
    // Each way of resting has happened: delivered, retried at least once, dead-lettered.
    await r.until((rec) => rec.events.some((e) => e.payload.patient_id === DELIVERED));
    await r.until(
      (rec) =>
        rec.attempts.filter((a) => a.rawBody.includes(PENDING)).length >= 2 &&
        rec.attempts.some((a) => a.rawBody.includes(DEAD)),
    );
    await h.logs.waitFor((e) => e.outcome === 'dead_lettered');
    const letters = (await Promise.all(deadLetters.map((store) => store.list()))).flat();
    expect(letters.map((l) => l.event.patient_id)).toEqual([DEAD]);
    // The outbound queue has all three results (sealed), the consumer opens them.
    expect((await h.delivered()).map((e) => e.patient_id).sort()).toEqual([...PLANTED].sort());

    const findings = await scanRedisFor(h.redis, h.prefix, PLANTED);
    expect(findings).toEqual([]);
    // Nor in any log line of the run.
    for (const id of PLANTED) expect(h.logs.lines.join('\n')).not.toContain(id);
  });
});
