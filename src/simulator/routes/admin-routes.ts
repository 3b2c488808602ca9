import type { FastifyInstance } from 'fastify';
import { FaultProfileSchema } from '../fault-profile.ts';
import { sendDetail, sendValidationError } from '../error-replies.ts';
import { requireJson } from '../hooks/require-json.ts';
import type { SimulatorState } from '../simulator-state.ts';
import { PathIdSchema } from './path-id.ts';

/**
 * `/_admin/*` (header `x-admin-key`): the request log, the fault profile, and counters that show
 * what the simulator holds in memory.
 */
export function registerAdminRoutes(app: FastifyInstance, state: SimulatorState): void {
  const { requestLog, faults } = state;

  app.get('/_admin/requests', async () => requestLog.entries());
  app.delete('/_admin/requests', async (_request, reply) => {
    requestLog.clear();
    return reply.code(204).send();
  });

  app.get('/_admin/faults', async () => faults.profile);
  app.post('/_admin/faults', { onRequest: requireJson }, async (request, reply) => {
    const parsed = FaultProfileSchema.safeParse(request.body);
    if (!parsed.success) return sendValidationError(reply, 'body', parsed.error.issues);
    faults.replace(parsed.data);
    return parsed.data;
  });
  app.delete('/_admin/faults', async (_request, reply) => {
    faults.clear();
    return reply.code(204).send();
  });

  app.get('/_admin/stats', async () => ({
    jobs: state.jobs.size,
    registered_patients: state.patients.size,
    relationships: state.graph.relationships.length,
    logged_requests: requestLog.size,
  }));

  // When a concordance job was submitted and when it finishes (or finished), how often its status
  // was read and when a read first found it finished: the benchmark measures polls per query and
  // the time from a remote job's end to the worker seeing it.
  app.get<{ Params: { job_id: string } }>('/_admin/jobs/:job_id', async (request, reply) => {
    const id = PathIdSchema.safeParse(request.params.job_id);
    if (!id.success) return sendValidationError(reply, 'path', id.error.issues, ['job_id']);
    const timeline = state.jobs.timeline(id.data);
    if (timeline === undefined) return sendDetail(reply, 404, 'Job not found');
    return {
      job_id: id.data,
      outcome: timeline.outcome,
      submitted_at: new Date(timeline.submittedAt).toISOString(),
      running_at: new Date(timeline.runningAt).toISOString(),
      finishes_at: new Date(timeline.finishAt).toISOString(),
      status_reads: timeline.reads,
      first_finished_read_at:
        timeline.firstFinishedReadAt === null
          ? null
          : new Date(timeline.firstFinishedReadAt).toISOString(),
    };
  });
}
