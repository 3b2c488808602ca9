import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ConcordanceRequestSchema } from '../../interface/concordance.ts';
import { outlineConcordance } from '../concordance/concordance-outline.ts';
import { renderConcordance } from '../concordance/render-concordance.ts';
import { sendValidationError } from '../error-replies.ts';
import { requireJson } from '../hooks/require-json.ts';
import type { JobOutcome } from '../jobs/job-store.ts';
import { uuidFrom } from '../seeded-random.ts';
import type { SimulatorState } from '../simulator-state.ts';
import { PathIdSchema } from './path-id.ts';

/** `POST /v1/concordance` (202 `{job_id}`) and `GET /v1/concordance/:job_id`. */
export function registerConcordanceRoutes(app: FastifyInstance, state: SimulatorState): void {
  const { tables, jobs, faults, random } = state;
  const SubmitSchema = ConcordanceRequestSchema.extend({
    ccsr_category: ConcordanceRequestSchema.shape.ccsr_category.refine(
      (code) => tables.isCategory(code),
      { message: 'not a CCSR v2023.1 problem category (placeholder codes are not accepted)' },
    ),
  });

  const drawOutcome = (): JobOutcome => {
    const profile = faults.profile;
    const u = random.jobOutcomes.next();
    const loss = profile.job_loss_rate ?? 0;
    const failure = loss + (profile.job_failure_rate ?? 0);
    const never = failure + (profile.never_finish_rate ?? 0);
    if (u < loss) return 'lost';
    if (u < failure) return 'failed';
    if (u < never) return 'never_finish';
    return 'completed';
  };

  const drawDuration = (): number => {
    const l = faults.profile.latency;
    const [min, max] = l
      ? [l.min_ms, l.max_ms]
      : [state.options.latency.minMs, state.options.latency.maxMs];
    return random.jobDurations.int(min, max);
  };

  app.post('/v1/concordance', { onRequest: requireJson }, async (request, reply) => {
    const parsed = SubmitSchema.safeParse(request.body);
    if (!parsed.success) return sendValidationError(reply, 'body', parsed.error.issues);
    const category = tables.category(parsed.data.ccsr_category);
    if (category === undefined) throw new Error('category vanished after validation');
    const jobId = uuidFrom(random.jobIds);
    jobs.add(
      jobId,
      drawDuration(),
      drawOutcome(),
      outlineConcordance(parsed.data.assembled_patient, category),
    );
    return reply.code(202).send({ job_id: jobId });
  });

  const JobParams = z.object({ job_id: PathIdSchema });
  app.get('/v1/concordance/:job_id', async (request, reply) => {
    const params = JobParams.safeParse(request.params);
    if (!params.success) return sendValidationError(reply, 'path', params.error.issues);
    const job = jobs.get(params.data.job_id);
    return {
      status: job.status,
      concordance: job.outline === undefined ? null : renderConcordance(job.outline, tables),
    };
  });
}
