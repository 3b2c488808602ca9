import type { FastifyInstance, FastifyReply } from 'fastify';
import type { FeedTrace } from '../feed-trace.ts';

/**
 * The `fhir` feed's trace of each answered request of this plugin's routes (`onSend`): every message counts `received`; a refused one (4xx,
 * 5xx) counts `errored` and writes nothing (bad input changes nothing: no receipt). A stored
 * message's receipts are the commits'. 401 and 403 are not a feed's messages.
 */
export function installFhirTrace(app: FastifyInstance, trace: FeedTrace): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    traceFhirAnswer(trace, reply);
    return payload;
  });
}

function traceFhirAnswer(trace: FeedTrace, reply: FastifyReply): void {
  const status = reply.statusCode;
  if (status === 401 || status === 403) return;
  trace.received();
  if (status < 400) return;
  trace.errored();
}
