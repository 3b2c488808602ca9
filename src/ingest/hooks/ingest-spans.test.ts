import { describe, expect, it } from 'vitest';
import { BATCH_ROUTE } from '../routes/record-update-batch-routes.ts';
import { HL7V2_ROUTE } from '../hl7v2/hl7v2-routes.ts';
import { FHIR_NOTIFICATIONS_ROUTE } from '../fhir/fhir-routes.ts';
import { REST_HOOK_ROUTE } from '../fhir/rest-hook-routes.ts';
import { feedOfRoute } from './ingest-spans.ts';

describe('feedOfRoute', () => {
  it('names the feed of each feed route template', () => {
    expect(feedOfRoute('/v1/record-updates')).toBe('json');
    expect(feedOfRoute(BATCH_ROUTE)).toBe('json');
    expect(feedOfRoute(HL7V2_ROUTE)).toBe('hl7v2-http');
    expect(feedOfRoute(FHIR_NOTIFICATIONS_ROUTE)).toBe('fhir');
    expect(feedOfRoute('/v1/fhir/Bundle')).toBe('fhir');
    expect(feedOfRoute(`${REST_HOOK_ROUTE}/:name/:type/:id`)).toBe('fhir');
  });

  it('no feed (no span) for the other routes and for a request without a route', () => {
    for (const route of [
      '/healthz',
      '/metrics',
      '/v1/patients/:patient_id/presets',
      '/v1/admin/messages/:control_id/trace',
      '/admin/queues/*',
      undefined,
    ]) {
      expect(feedOfRoute(route)).toBeUndefined();
    }
  });
});
