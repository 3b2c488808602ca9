import { describe, expect, it } from 'vitest';
import { allowedAttribute, guardAttributes, guardName } from './span-attribute-allowlist.ts';

describe('the span attribute allowlist', () => {
  it('keeps listed keys whose values have the listed shape', () => {
    const kept = {
      'cw.feed': 'adt-main',
      'cw.partition': 2,
      'cw.ccsr_category': 'CIR007',
      'cw.query.seq': 41,
      'cw.remote_job_id': '5b0e8d8c-3f9a-4c1e-9f57-1f3c8f0b6a21',
      'http.request.method': 'POST',
      'http.response.status_code': 202,
      'url.scheme': 'https',
      'server.address': 'cgs.example.org',
      'messaging.system': 'bullmq',
      'bullmq.queue.name': 'concordance-queries',
      'db.system.name': 'redis',
    };
    expect(guardAttributes(kept)).toEqual({ attributes: kept, dropped: 0 });
  });

  it('drops unlisted keys and listed keys with values of another shape', () => {
    const { attributes, dropped } = guardAttributes({
      'cw.feed': 'adt-main',
      'patient.name': 'MARKER-NAME',
      'cw.patient_id': 'MRN-MARKER',
      'messaging.message.body': 'MARKER body',
      'bullmq.job.id': 'job-MARKER',
      'bullmq.job.options': '{"MARKER":1}',
      'bullmq.job.failed.reason': 'MARKER failed',
      'exception.message': 'MARKER message',
      'url.full': 'https://x/patients/MARKER',
      'cw.ccsr_category': 'free text MARKER with spaces',
      'server.address': 'x'.repeat(65),
      'cw.query.seq': '41',
      'cw.partition': 1.5,
      'http.request.method': 'MARKER',
      'url.scheme': 'ftp',
      'cw.outcome': ['a', 'b'],
    });
    expect(attributes).toEqual({ 'cw.feed': 'adt-main' });
    expect(dropped).toBe(15);
    expect(JSON.stringify(attributes)).not.toContain('MARKER');
  });

  it('treats undefined as absent', () => {
    expect(allowedAttribute('cw.feed', undefined)).toBe(false);
    expect(guardAttributes(undefined)).toEqual({ attributes: {}, dropped: 0 });
  });

  it('keeps constant-looking span names and replaces others', () => {
    expect(guardName('cgs.submit')).toBe('cgs.submit');
    expect(guardName('add concordance-queries')).toBe('add concordance-queries');
    expect(guardName('POST /ingest/{feed}')).toBe('POST /ingest/{feed}');
    expect(guardName('lookup patient 12345678')).toBe('redacted');
    expect(guardName('Doe, Jane')).toBe('redacted');
    expect(guardName('x'.repeat(81))).toBe('redacted');
  });
});
