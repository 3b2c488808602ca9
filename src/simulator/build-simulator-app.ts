import Fastify, { type FastifyInstance } from 'fastify';
import { handleError, handleNotFound } from './error-replies.ts';
import { installApiKeyAuth } from './hooks/api-key-auth.ts';
import { installFaultHooks } from './hooks/fault-hooks.ts';
import { installRequestRecorder } from './hooks/request-recorder.ts';
import { registerAdminRoutes } from './routes/admin-routes.ts';
import { registerConcordanceRoutes } from './routes/concordance-routes.ts';
import { registerHealthRoutes } from './routes/health-routes.ts';
import { registerPreventRoutes } from './routes/prevent-routes.ts';
import { registerRelationshipRoutes } from './routes/relationship-routes.ts';
import { createSimulatorState } from './simulator-state.ts';
import {
  resolveSimulatorOptions,
  type ResolvedSimulatorOptions,
  type SimulatorOptions,
} from './simulator-options.ts';

/** Builds the app for already resolved options (see {@link buildSimulatorApp}). */
export function buildAppFromResolved(options: ResolvedSimulatorOptions): FastifyInstance {
  const app = Fastify({
    logger: options.logger,
    bodyLimit: options.bodyLimitBytes,
    // Hung requests must not hold close() up: end every connection, busy or idle.
    forceCloseConnections: true,
    // Over-long ids must reach the handlers, which answer 422 rather than the router's 404.
    routerOptions: { maxParamLength: 2048 },
  });
  // Only JSON bodies: without the text parser any other media type gets 415.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);

  const state = createSimulatorState(options);
  // Hook order matters: record, then authenticate (onRequest); faults after parsing.
  installRequestRecorder(app, state.requestLog);
  installApiKeyAuth(app, options.apiKeys, options.adminKey);
  installFaultHooks(app, state.faults, options.now);

  registerHealthRoutes(app);
  registerConcordanceRoutes(app, state);
  registerPreventRoutes(app, state);
  registerRelationshipRoutes(app, state);
  registerAdminRoutes(app, state);
  return app;
}

/**
 * The whole simulator as a Fastify instance that is not listening yet: tests can `inject()`
 * into it, {@link startSimulator} only adds `listen()`. Builds the relationship graph at once.
 */
export function buildSimulatorApp(options: SimulatorOptions): FastifyInstance {
  return buildAppFromResolved(resolveSimulatorOptions(options));
}
