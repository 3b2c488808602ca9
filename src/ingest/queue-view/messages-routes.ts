import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { ReadOnlyError } from '../errors/read-only-error.ts';
import type { MessageTraceReader } from '../../trace/message-trace-reader.ts';
import { FEEDS } from '../../trace/trace-keys.ts';
import {
  messagesErrorPage,
  messagesListPage,
  messageTracePage,
  type MessagesPaths,
} from './messages-page.ts';

/** Rows of one page of the Messages list unless `limit` says otherwise, and at most. */
export const MESSAGES_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 200;

/** The list's query string: an empty `feed` (the form's "every feed") is no filter. */
const ListQuerySchema = z.object({
  feed: z
    .union([z.enum(FEEDS), z.literal('')])
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
  before: z
    .string()
    .regex(/^\d{1,15}$/)
    .transform(Number)
    .optional(),
  limit: z
    .string()
    .regex(/^\d{1,4}$/)
    .transform(Number)
    .pipe(z.number().int().min(1).max(MAX_PAGE_SIZE))
    .optional(),
});

const TraceParamsSchema = z.object({ controlId: z.string().min(1).max(1_024) });

export interface MessagesRoutesOptions {
  /** What the pages read: the message trace of every partition. */
  reader: Pick<MessageTraceReader, 'recent' | 'byControlId'>;
  /** `trace.enabled`: when off, the list says that nothing new is kept. */
  traceEnabled: boolean;
  paths: MessagesPaths;
}

const html = (reply: FastifyReply, status: number, body: string) =>
  reply.code(status).type('text/html; charset=utf-8').send(body);

/**
 * The queue view's Messages pages (docs/queue-view.md#messages), server-rendered, read-only:
 * `GET /messages` (the newest messages, `?feed=` and `?before=` to filter and page) and
 * `GET /messages/:controlId` (one message's trace). Registered inside the view's scope, so that
 * the view's sign-in, read-only check and headers apply to them as to the board.
 */
export function messagesRoutes(
  app: FastifyInstance,
  { reader, traceEnabled, paths }: MessagesRoutesOptions,
): void {
  app.get('/messages', async (request, reply) => {
    const query = ListQuerySchema.safeParse(request.query);
    if (!query.success) {
      return html(
        reply,
        400,
        messagesErrorPage(
          `Not a filter of this page: feed is one of ${FEEDS.join(', ')}; before and limit are numbers (limit at most ${MAX_PAGE_SIZE}).`,
          paths,
        ),
      );
    }
    const { feed, before, limit } = query.data;
    const page = await reader.recent({
      limit: limit ?? MESSAGES_PAGE_SIZE,
      ...(feed === undefined ? {} : { feed }),
      ...(before === undefined ? {} : { before }),
    });
    return html(
      reply,
      200,
      messagesListPage(page, { paths, traceEnabled, ...(feed === undefined ? {} : { feed }) }),
    );
  });

  app.get('/messages/:controlId', async (request, reply) => {
    const params = TraceParamsSchema.safeParse(request.params);
    if (!params.success) {
      return html(reply, 400, messagesErrorPage('Not a control id.', paths));
    }
    const trace = await reader.byControlId(params.data.controlId);
    return html(reply, trace.receipts.length === 0 ? 404 : 200, messageTracePage(trace, { paths }));
  });

  // The other methods are routes of the view too, so that they reach its sign-in and read-only
  // checks (and answer 405 there) rather than the ingest API's bearer check.
  for (const url of ['/messages', '/messages/:controlId']) {
    app.route({
      method: ['POST', 'PUT', 'PATCH', 'DELETE'],
      url,
      handler: async (_request, reply) => {
        const refused = new ReadOnlyError();
        return reply.code(refused.statusCode).headers(refused.headers).send(refused.body);
      },
    });
  }
}
