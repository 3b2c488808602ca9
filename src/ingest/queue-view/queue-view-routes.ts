import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import { FastifyAdapter } from '@bull-board/fastify';
import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Config } from '../../config/config-schema.ts';
import { WEBHOOK_DELIVERIES } from '../../delivery/webhook-deliveries-queue.ts';
import { CONCORDANCE_QUERIES } from '../../queues/queue-names.ts';
import type { IngestHttpError } from '../errors/ingest-http-error.ts';
import { READ_METHODS, ReadOnlyError } from '../errors/read-only-error.ts';
import { UnauthorizedError } from '../errors/unauthorized-error.ts';
import { bearerTokenOf } from '../hooks/bearer-auth.ts';
import { DeadLetterAdapter } from './dead-letter-adapter.ts';
import { loginPage } from './login-page.ts';
import { messagesRoutes } from './messages-routes.ts';
import { PollsAdapter } from './polls-adapter.ts';
import { QueueViewSessions } from './queue-view-session.ts';
import type { QueueViewPlace, QueueViewSource } from './queue-view-source.ts';

/** Where the view is served on the ingest port. */
export const QUEUE_VIEW_PATH = '/admin/queues';
export const QUEUE_VIEW_LOGIN = `${QUEUE_VIEW_PATH}/login`;
export const QUEUE_VIEW_LOGOUT = `${QUEUE_VIEW_PATH}/logout`;
/** The Messages pages (the message trace): the list, and `/<control id>` for one message. */
export const QUEUE_VIEW_MESSAGES = `${QUEUE_VIEW_PATH}/messages`;
/** The session cookie (HttpOnly, SameSite=Strict, Path=/admin/queues). */
export const QUEUE_VIEW_COOKIE = 'cw_queue_view';

const API = `${QUEUE_VIEW_PATH}/api/`;
const STATIC = `${QUEUE_VIEW_PATH}/static/`;

/** The login form's fields; anything else in the body is ignored. */
const LoginFormSchema = z.object({ token: z.string().max(1_024) });

/**
 * Sent with every answer of the view: nothing is cached, framed or referred onwards, and the
 * pages load nothing from elsewhere (the board's web font falls back to the system's).
 */
const VIEW_HEADERS = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    "frame-ancestors 'none'; form-action 'self'; base-uri 'self'",
};

const DESCRIPTIONS: Record<string, string> = {
  [CONCORDANCE_QUERIES]:
    'One job per query, from its debounce to its submission (delayed while it debounces; completed with the remote job id, then polled: see query-polls).',
  [WEBHOOK_DELIVERIES]:
    'One job per result event on its way to the webhook: delayed while it waits for its line or backs off. A given-up delivery leaves it for the dead letters.',
};
const OUTBOUND_DESCRIPTION =
  "Result events for the hospital's consumers; patient_id is sealed under OUTBOUND_KEY.";

export interface QueueViewOptions {
  /** `admin.queue_view` (`enabled`, `QUEUE_VIEW_TOKENS`, session lifetime, cookie). */
  config: Config['admin']['queue_view'];
  source: QueueViewSource;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route is the queue view's: the view's own check (`QUEUE_VIEW_TOKENS`, by session
     * cookie or bearer header) stands in for the ingest bearer check.
     */
    queueView?: boolean;
  }
}

/** Answers `error` from a hook (the board's own error handler would reword a thrown one). */
function answer(reply: FastifyReply, error: IngestHttpError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).send(error.body);
}

/**
 * Whether the browser reached us over TLS: this process's own connection, or a proxy in front that
 * terminated TLS and says so (`X-Forwarded-Proto: https`). Trusting the header is safe here: it can
 * only add `Secure` to the cookie, which a plain-HTTP client then does not send back.
 */
function overTls(request: FastifyRequest): boolean {
  const forwarded = request.headers['x-forwarded-proto'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
  return request.protocol === 'https' || first?.toLowerCase() === 'https';
}

/** The board's name for a queue: its Redis key root (`<prefix>:<queue>`), grouped by prefix. */
const boardPrefix = (place: QueueViewPlace) => `${place.prefix}:`;

/**
 * The operator's queue view (bull-board) under {@link QUEUE_VIEW_PATH}: every queue of the
 * deployment, each partition's queries being polled and its dead letters, read-only, behind the
 * view's own tokens. A browser signs in at `/login` with a token and gets a session cookie (see
 * {@link QueueViewSessions}); scripts may send `Authorization: Bearer <token>` instead. Without
 * either, pages redirect to the login form and everything else answers 401. Register it with
 * `prefix: QUEUE_VIEW_PATH`.
 */
export async function queueViewRoutes(
  app: FastifyInstance,
  { config, source }: QueueViewOptions,
): Promise<void> {
  const sessions = new QueueViewSessions({
    tokens: config.tokens ?? [],
    ttlS: config.session_ttl_s,
  });

  // Every route of this scope, the board's included, is the view's (see installBearerAuth), and
  // none is part of the ingest API: the OpenAPI description (docs/openapi.json) leaves them out,
  // so that it is the same whether the view is on or off.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, queueView: true };
    route.schema = { ...route.schema, hide: true };
  });
  await app.register(fastifyCookie);
  // The login form's body; only in this scope (the ingest routes take JSON alone).
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 4_096 },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
  );

  const signedIn = (request: FastifyRequest) => {
    const bearer = bearerTokenOf(request.headers.authorization);
    if (bearer !== undefined) return sessions.accepts(bearer);
    return sessions.holds(request.cookies[QUEUE_VIEW_COOKIE]);
  };

  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(QUEUE_VIEW_PATH);
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'concordance-worker queues',
        miscLinks: [
          { text: 'Messages', url: QUEUE_VIEW_MESSAGES },
          { text: 'Sign out', url: QUEUE_VIEW_LOGOUT },
        ],
      },
    },
  });
  const suffix = (place: QueueViewPlace) =>
    source.partitions > 1 ? ` · partition ${place.partition}` : '';
  const deadLetters = source.deadLetters.map(
    (place) =>
      new DeadLetterAdapter({
        store: place.store,
        prefix: boardPrefix(place),
        displayName: `dead letters${suffix(place)}`,
      }),
  );
  const polls = source.polls.map(
    (place) =>
      new PollsAdapter({
        listing: place.listing,
        prefix: boardPrefix(place),
        displayName: `query polls${suffix(place)}`,
      }),
  );
  const opened = new Map<string, BaseAdapter>();
  // The deployment's queues as they are now (one may appear later), then the polls and the dead
  // letters.
  const refresh = async () => {
    const adapters = (await source.queues()).map((place) => {
      const key = `${place.prefix}:${place.queue.name}`;
      let adapter = opened.get(key);
      if (adapter === undefined) {
        adapter = new BullMQAdapter(place.queue, {
          readOnlyMode: true,
          allowRetries: false,
          prefix: boardPrefix(place),
          delimiter: ':',
          displayName: `${place.queue.name}${suffix(place)}`,
          description: DESCRIPTIONS[place.queue.name] ?? OUTBOUND_DESCRIPTION,
        });
        opened.set(key, adapter);
      }
      return adapter;
    });
    board.replaceQueues([...adapters, ...polls, ...deadLetters]);
  };

  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url ?? '';
    if (route === QUEUE_VIEW_LOGIN || route === QUEUE_VIEW_LOGOUT) return;
    if (!signedIn(request)) {
      const page = request.method === 'GET' && !route.startsWith(API) && !route.startsWith(STATIC);
      if (page) return reply.redirect(QUEUE_VIEW_LOGIN, 303);
      const presented =
        request.headers.authorization !== undefined ||
        request.cookies[QUEUE_VIEW_COOKIE] !== undefined;
      request.authFailure = presented ? 'invalid' : 'missing';
      return answer(
        reply,
        new UnauthorizedError(
          `sign in to the queue view at ${QUEUE_VIEW_LOGIN}, or send Authorization: Bearer <one of QUEUE_VIEW_TOKENS>`,
        ),
      );
    }
    // Read-only whatever the board offers: its changes would take jobs out of step with the
    // delivery and query state kept beside them.
    if (!READ_METHODS.includes(request.method)) return answer(reply, new ReadOnlyError());
    if (route.startsWith(API)) await refresh();
  });
  app.addHook('onSend', async (_request, reply) => {
    reply.headers(VIEW_HEADERS);
  });
  app.addHook('onClose', () => source.close());

  const login = (reply: FastifyReply, failed: boolean) =>
    reply
      .code(failed ? 401 : 200)
      .type('text/html; charset=utf-8')
      .send(loginPage(QUEUE_VIEW_LOGIN, failed));
  app.get('/login', async (_request, reply) => login(reply, false));
  app.post('/login', async (request, reply) => {
    const form = LoginFormSchema.safeParse(request.body);
    const session = form.success ? sessions.open(form.data.token) : undefined;
    if (session === undefined) {
      request.authFailure = form.success && form.data.token !== '' ? 'invalid' : 'missing';
      return login(reply, true);
    }
    const secure = config.secure_cookie === 'always' || overTls(request);
    return reply
      .setCookie(QUEUE_VIEW_COOKIE, session, {
        path: QUEUE_VIEW_PATH,
        httpOnly: true,
        sameSite: 'strict',
        secure,
        maxAge: sessions.ttlS,
      })
      .redirect(`${QUEUE_VIEW_PATH}/`, 303);
  });
  app.get('/logout', async (_request, reply) =>
    reply.clearCookie(QUEUE_VIEW_COOKIE, { path: QUEUE_VIEW_PATH }).redirect(QUEUE_VIEW_LOGIN, 303),
  );
  messagesRoutes(app, {
    reader: source.messages.reader,
    traceEnabled: source.messages.traceEnabled,
    paths: { board: `${QUEUE_VIEW_PATH}/`, list: QUEUE_VIEW_MESSAGES, logout: QUEUE_VIEW_LOGOUT },
  });

  await app.register(serverAdapter.registerPlugin());
}
