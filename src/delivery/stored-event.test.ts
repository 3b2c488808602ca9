import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import type { ResultEvent } from '../interface/result-event.ts';
import { openStoredEvent, resealStoredEvent, sealStoredEvent } from './stored-event.ts';

const event = (patientId: string | null): ResultEvent => ({
  id: randomUUID(),
  type: 'concordance.completed',
  created_at: '2026-11-02T08:00:00.000Z',
  patient_id: patientId,
  patient_service_id: 'psid-1',
  ccsr_category: 'END002',
  record_version: 1,
  triggered_by: { event_ids: ['e1'], count: 1, first_update_at: null, last_update_at: null },
  remote_job_id: 'job-1',
  status: 'completed',
  concordance: { concordant: true },
  error: null,
  changed: true,
});

describe('stored events', () => {
  const a = deriveCrosswalkKeys(generateCrosswalkSecret());
  const b = deriveCrosswalkKeys(generateCrosswalkSecret());

  it('seal patient_id bound to the event id, and open back to the same event', () => {
    const e = event('MRN-STORED-1');
    const stored = sealStoredEvent(e, a);
    expect(stored).not.toHaveProperty('patient_id');
    expect(JSON.stringify(stored)).not.toContain('MRN-STORED-1');
    expect(openStoredEvent(stored, a)).toEqual(e);
    expect(() => openStoredEvent(stored, b)).toThrow();
    expect(() => openStoredEvent({ ...stored, id: randomUUID() }, a)).toThrow();
    const nobody = event(null);
    expect(sealStoredEvent(nobody, a).patient_id_sealed).toBeNull();
    expect(openStoredEvent(sealStoredEvent(nobody, a), a)).toEqual(nobody);
  });

  it('reseal under new keys; an event stored plain by an earlier version still opens and gets sealed', () => {
    const e = event('MRN-STORED-2');
    const moved = resealStoredEvent(sealStoredEvent(e, a), a, b);
    expect(openStoredEvent(moved, b)).toEqual(e);
    expect(() => openStoredEvent(moved, a)).toThrow();
    expect(openStoredEvent(e, a)).toEqual(e);
    const sealedNow = resealStoredEvent(e, a, b);
    expect(JSON.stringify(sealedNow)).not.toContain('MRN-STORED-2');
    expect(openStoredEvent(sealedNow, b)).toEqual(e);
  });
});
