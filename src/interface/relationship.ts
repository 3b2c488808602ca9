import { z } from 'zod';

/** Datetimes as the service may write them: with `Z`, an offset, or none. */
const datetime = z.iso.datetime({ offset: true, local: true });

/** Section 2, Concept: every field optional. */
export const ConceptSchema = z.looseObject({
  cui: z.string().optional(),
  preferred_name: z.string().optional(),
  service_category: z.string().optional(),
  ccsr_body_systems: z.array(z.string()).optional(),
  ccsr_categories: z.array(z.string()).optional(),
});
export type Concept = z.infer<typeof ConceptSchema>;

/** Section 2, RelationshipMetadata: every field optional; counts are integers. */
export const RelationshipMetadataSchema = z.looseObject({
  num_findings: z.int().optional(),
  num_studies: z.int().optional(),
  last_published_date: datetime.optional(),
  highest_cited: z.int().optional(),
  highest_sample_size: z.int().optional(),
  num_experimental_trials: z.int().optional(),
  median_effect_size: z.number().optional(),
  num_significant_findings: z.int().optional(),
  last_updated: datetime.optional(),
});
export type RelationshipMetadata = z.infer<typeof RelationshipMetadataSchema>;

/** Section 2, Relationship. */
export const RelationshipSchema = z.looseObject({
  relationship_id: z.string(),
  from_concept: ConceptSchema,
  to_concept: ConceptSchema,
  metadata: RelationshipMetadataSchema.optional(),
});
export type Relationship = z.infer<typeof RelationshipSchema>;

/**
 * An item of a list page. With a `fields` projection the service leaves out what was not asked
 * for, so every field is optional here; the ones present are still checked.
 */
export const RelationshipProjectionSchema = RelationshipSchema.partial();
export type RelationshipProjection = z.infer<typeof RelationshipProjectionSchema>;

/** The fields a `fields` projection may name. */
export const RELATIONSHIP_FIELDS = [
  'relationship_id',
  'from_concept',
  'to_concept',
  'metadata',
] as const;
export type RelationshipField = (typeof RELATIONSHIP_FIELDS)[number];

/** Section 2, ListResponse[Relationship]: `total` only when `include_total` was true. */
export const RelationshipListSchema = z.looseObject({
  data: z.array(RelationshipProjectionSchema),
  total: z.int().nonnegative().optional(),
});
export type RelationshipList = z.infer<typeof RelationshipListSchema>;
