import { z } from 'zod';

/**
 * The AssembledPatient. The interface shows none of its fields; this is the shape the real service
 * documents publicly (`{nodes, relationships, demographics}`), see docs/interface-choices.md.
 */
export const NODE_TYPES = [
  'condition',
  'observation',
  'intervention',
  'allergy',
  'immunization',
] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export const CodingSchema = z.looseObject({
  system: z.string().min(1),
  code: z.string().min(1),
  display: z.string().optional(),
});
export type Coding = z.infer<typeof CodingSchema>;

export const AssembleNodeSchema = z.looseObject({
  /** The node's id within this record; edges refer to it. */
  id: z.string().min(1),
  node_type: z.enum(NODE_TYPES),
  notable: z.boolean(),
  /** An opaque reference such as `Condition/abc`, mapped back by the caller. */
  fhir_id: z.string().optional(),
  service_id: z.string().optional(),
  service_preferred_name: z.string().optional(),
  coding: z.array(CodingSchema).default([]),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type AssembleNode = z.infer<typeof AssembleNodeSchema>;

export const AssembleEdgeSchema = z.looseObject({
  source_id: z.string().min(1),
  target_id: z.string().min(1),
  relationship_type: z.string().optional(),
});
export type AssembleEdge = z.infer<typeof AssembleEdgeSchema>;

export const DemographicsSchema = z.looseObject({
  /** Whole years; anyone older than 89 is sent as 90 (HIPAA Safe Harbor). */
  age: z.int().min(0).max(90),
  gender: z.string().optional(),
  race: z.string().optional(),
});
export type Demographics = z.infer<typeof DemographicsSchema>;

export const AssembledPatientSchema = z
  .looseObject({
    nodes: z.array(AssembleNodeSchema),
    relationships: z.array(AssembleEdgeSchema).default([]),
    demographics: DemographicsSchema,
  })
  .superRefine((patient, ctx) => {
    const ids = new Set<string>();
    patient.nodes.forEach((node, i) => {
      if (ids.has(node.id)) {
        ctx.addIssue({ code: 'custom', path: ['nodes', i, 'id'], message: 'duplicate node id' });
      }
      ids.add(node.id);
    });
    patient.relationships.forEach((edge, i) => {
      for (const end of ['source_id', 'target_id'] as const) {
        if (!ids.has(edge[end])) {
          ctx.addIssue({
            code: 'custom',
            path: ['relationships', i, end],
            message: 'does not name a node of this record',
          });
        }
      }
    });
  });
export type AssembledPatient = z.infer<typeof AssembledPatientSchema>;
