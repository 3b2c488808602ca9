import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { sendDetail, sendValidationError } from '../error-replies.ts';
import { listQuerySchema } from '../relationships/list-query.ts';
import { listRelationships } from '../relationships/list-relationships.ts';
import type { SimulatorState } from '../simulator-state.ts';
import { PathIdSchema } from './path-id.ts';

/** `GET /v1/relationships` (a page) and `GET /v1/relationships/:relationship_id`. */
export function registerRelationshipRoutes(app: FastifyInstance, state: SimulatorState): void {
  const { graph } = state;
  const ListQuerySchema = listQuerySchema(state.options.maxListLimit);

  app.get('/v1/relationships', async (request, reply) => {
    const query = ListQuerySchema.safeParse(request.query);
    if (!query.success) return sendValidationError(reply, 'query', query.error.issues);
    return listRelationships(graph, query.data);
  });

  const Params = z.object({ relationship_id: PathIdSchema });
  app.get('/v1/relationships/:relationship_id', async (request, reply) => {
    const params = Params.safeParse(request.params);
    if (!params.success) return sendValidationError(reply, 'path', params.error.issues);
    const found = graph.get(params.data.relationship_id);
    return found ?? sendDetail(reply, 404, 'Relationship not found');
  });
}
