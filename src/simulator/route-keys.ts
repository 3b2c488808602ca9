/**
 * The service routes as `<METHOD> <fastify route pattern>`: the keys a fault profile may use.
 * Admin routes and `/healthz` are not listed because faults never apply to them.
 */
export const SERVICE_ROUTES = [
  'POST /v1/concordance',
  'GET /v1/concordance/:job_id',
  'POST /v1/patient',
  'POST /v1/patient/:patient_service_id',
  'GET /v1/relationships',
  'GET /v1/relationships/:relationship_id',
] as const;
export type ServiceRoute = (typeof SERVICE_ROUTES)[number];

/** Matches every service route (including unknown paths) in a fault profile. */
export const ANY_ROUTE = '*';
