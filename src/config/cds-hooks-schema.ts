import { z } from 'zod';

const httpUrl = z.url({ protocol: /^https?$/ });

/**
 * One CDS Client (an EHR) allowed to call the CDS Hooks service (docs/cds-hooks.md): the `iss` of
 * its JWTs and where its public keys are, as a JWKS URL or inline.
 */
export const CdsHooksClientSchema = z
  .strictObject({
    /** The `iss` claim of the client's JWTs (exact match). */
    issuer: z.string().min(1),
    /** Where the client publishes its JWK Set (fetched and cached). */
    jwks_url: httpUrl.optional(),
    /** The client's JWK Set itself (`{"keys": [...]}`, public keys only). */
    jwks: z
      .strictObject({
        keys: z.array(z.looseObject({ kty: z.string().min(1) })).min(1),
      })
      .optional(),
    /**
     * FHIR base URLs (`fhirServer`) this client's Patients may be read from, with the request's
     * `fhirAuthorization.access_token`, when the identity settings key a Patient by an identifier
     * and the request carries no `prefetch.patient`. Exact base URLs; empty: never read.
     */
    fhir_servers: z.array(httpUrl).default([]),
  })
  .refine(
    (client) => (client.jwks_url === undefined) !== (client.jwks === undefined),
    'give exactly one of jwks_url and jwks',
  );
export type CdsHooksClient = z.infer<typeof CdsHooksClientSchema>;

/** `cds_hooks`: the CDS Hooks service on the ingest port (docs/cds-hooks.md). Off by default. */
export const CdsHooksSchema = z
  .strictObject({
    /** `CDS_HOOKS_ENABLED`: serve `/cds-services`, and keep the latest results for it. */
    enabled: z.boolean().default(false),
    /**
     * `CDS_HOOKS_BASE_URL`: the service's base URL as the EHR calls it (no trailing `/cds-services`).
     * A JWT's `aud` must be `<base_url>/cds-services/<id>`.
     */
    base_url: httpUrl.nullable().default(null),
    /** The EHRs allowed to call (their JWT issuers and keys). */
    clients: z.array(CdsHooksClientSchema).default([]),
    /** Leave out the cards of categories whose result is concordant. */
    hide_concordant: z.boolean().default(false),
    /** Also list a `patient-view` service for Prevent's recommendations (needs `prevent.enabled`). */
    prevent_service: z.boolean().default(false),
    /** Leeway for `exp`, `iat` and `nbf`, in seconds. */
    clock_tolerance_s: z.int().min(0).max(300).default(30),
    /** Oldest `iat` accepted, in seconds. */
    max_token_age_s: z.int().min(10).max(3_600).default(300),
    /** Per read of a Patient from the EHR's FHIR server. */
    fhir_timeout_ms: z.int().positive().default(2_000),
    /** The cards' `source`. */
    source: z
      .strictObject({
        label: z.string().min(1).max(100).default('Guideline concordance (Clinical Graph Service)'),
        url: httpUrl.optional(),
      })
      .prefault({}),
  })
  .superRefine((cds, ctx) => {
    if (!cds.enabled) return;
    if (cds.base_url === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['base_url'],
        message: 'cds_hooks.enabled needs the service’s base URL (CDS_HOOKS_BASE_URL)',
      });
    }
    if (cds.clients.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['clients'],
        message: 'cds_hooks.enabled needs at least one client (an issuer with its JWKS)',
      });
    }
    const issuers = cds.clients.map((c) => c.issuer);
    issuers.forEach((issuer, i) => {
      if (issuers.indexOf(issuer) !== i) {
        ctx.addIssue({ code: 'custom', path: ['clients', i, 'issuer'], message: 'listed twice' });
      }
    });
  })
  .prefault({});
export type CdsHooksConfig = z.infer<typeof CdsHooksSchema>;
