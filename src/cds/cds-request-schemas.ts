import { z } from 'zod';

/** A FHIR logical id (FHIR R4 `id`): 1 to 64 letters, digits, `-` and `.`. */
const fhirId = z.string().regex(/^[A-Za-z0-9.-]{1,64}$/, 'a FHIR logical id');

/** CDS Hooks 2.0, "Calling a CDS Service": the request body (unknown fields are ignored). */
export const CdsServiceRequestSchema = z
  .looseObject({
    hook: z.string().min(1),
    hookInstance: z.string().min(1).max(256),
    fhirServer: z.url({ protocol: /^https?$/ }).optional(),
    fhirAuthorization: z
      .looseObject({
        access_token: z.string().min(1),
        token_type: z.string().min(1),
        expires_in: z.number().optional(),
        scope: z.string().optional(),
        subject: z.string().optional(),
      })
      .optional(),
    context: z.looseObject({ patientId: fhirId, userId: z.string().optional() }),
    prefetch: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'CdsServiceRequest' });
export type CdsServiceRequest = z.infer<typeof CdsServiceRequestSchema>;

const CodingSchema = z.looseObject({
  code: z.string().min(1),
  system: z.string().min(1).optional(),
  display: z.string().optional(),
});

/** CDS Hooks 2.0, "Feedback": the request body. */
export const CdsFeedbackRequestSchema = z
  .looseObject({
    feedback: z
      .array(
        z.looseObject({
          card: z.string().min(1),
          outcome: z.enum(['accepted', 'overridden']),
          acceptedSuggestions: z.array(z.looseObject({ id: z.string().min(1) })).optional(),
          overrideReason: z
            .looseObject({ reason: CodingSchema.optional(), userComment: z.string().optional() })
            .optional(),
          outcomeTimestamp: z.string().min(1),
        }),
      )
      .min(1)
      .max(1_000),
  })
  .meta({ id: 'CdsFeedbackRequest' });
export type CdsFeedbackRequest = z.infer<typeof CdsFeedbackRequestSchema>;

/** The path parameter of a service: its id. */
export const CdsServiceParamsSchema = z.object({
  id: z.string().regex(/^[a-z0-9-]{1,64}$/, 'a service id'),
});
