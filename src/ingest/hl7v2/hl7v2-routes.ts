import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../../config/config-schema.ts';
import type { Crosswalk } from '../../identity/crosswalk.ts';
import type { PresetStore } from '../../presets/preset-store.ts';
import type { UpdateCommitter } from '../update-committer.ts';
import type { RecordStore } from '../../records/record-store.ts';
import { ClinicalUpdates } from '../clinical-updates.ts';
import { z } from 'zod';
import { RedisUnavailableError } from '../errors/redis-unavailable-error.ts';
import { errorResponses } from '../openapi/error-responses.ts';
import { documentedBody } from '../openapi/ingest-openapi.ts';
import { HL7V2_EXAMPLE } from '../openapi/request-examples.ts';
import { NO_CONTENT } from '../schemas/answer-schemas.ts';
import { Hl7v2Handler, type ClinicalUpdatesPort, type PatientDeletePort } from './hl7v2-handler.ts';
import { Hl7v2Metrics } from './hl7v2-metrics.ts';
import { FeedTrace } from '../feed-trace.ts';

/** The ingest app's dependencies (`{...deps, registry}`); `updates` is built from them if absent. */
export interface Hl7v2RoutesOptions {
  config: Pick<Config, 'hl7v2' | 'presets'>;
  crosswalk: Crosswalk;
  records: RecordStore;
  presets: PresetStore;
  committer: UpdateCommitter;
  registry: Registry;
  logger: Logger;
  updates?: ClinicalUpdatesPort;
  /** A23/A29 deletes: the ingest app's `admin` (PatientAdmin). @defaultValue none (AE) */
  admin?: PatientDeletePort;
}

/** The path of the HL7 v2 over HTTP route. */
export const HL7V2_ROUTE = '/v1/hl7v2';

/** The media types integration engines send ER7 with (Mirth's HTTP Sender: text/plain). */
export const HL7V2_MEDIA_TYPES = ['text/plain', 'application/hl7-v2', 'x-application/hl7-v2+er7'];

/** Each media type with the same ER7 text (request) or ACK (answer). */
const er7 = (schema: z.ZodType) =>
  Object.fromEntries(HL7V2_MEDIA_TYPES.map((type) => [type, { schema }]));

const MESSAGE = z.string().meta({
  description:
    'One ER7 message, or a batch (FHS/BHS … BTS/FTS). Segments end with CR (LF and CRLF are ' +
    'read too). The character set is the `Content-Type` charset, else MSH-18, else ' +
    '`hl7v2.charset.http_default`.',
  examples: [HL7V2_EXAMPLE],
});

const ACK = z.string().meta({
  description: 'The ACK (MSA-1 AA, AE or AR), or a batch of ACKs, in UTF-8.',
});

/**
 * `POST /v1/hl7v2`: the body is one ER7 message, the answer its ACK (200 for AA, AE and AR), or a
 * batch (FHS/BHS), the answer one batch of ACKs. The body is read as bytes and decoded by the
 * `Content-Type` charset, else MSH-18, else `charset.http_default`; the ACK is sent in UTF-8. A
 * transient failure (of any message of a batch) is 503 with `Retry-After` (the interface's
 * `{detail}` body), so that the engine keeps the message queued and resends it. Bearer auth applies as on every ingest route.
 */
export const hl7v2Routes: FastifyPluginAsync<Hl7v2RoutesOptions> = async (app, options) => {
  const handler = new Hl7v2Handler({
    config: options.config.hl7v2,
    updates: options.updates ?? ClinicalUpdates.fromDeps(options),
    ...(options.admin === undefined ? {} : { patients: options.admin }),
    metrics: new Hl7v2Metrics(options.registry),
    logger: options.logger,
    transport: 'http',
    defaultCharset: options.config.hl7v2.charset.http_default,
    trace: new FeedTrace({
      feed: 'hl7v2-http',
      registry: options.registry,
      committer: options.committer,
      logger: options.logger,
    }),
  });
  // Encapsulated: the text parsers exist only inside this plugin.
  app.addContentTypeParser(HL7V2_MEDIA_TYPES, { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });
  app.post(
    HL7V2_ROUTE,
    {
      schema: {
        operationId: 'postHl7v2',
        summary: 'An HL7 v2 message (ER7) or batch; the answer is its ACK',
        description:
          'The same handling as the MLLP listener. Every outcome a sender should not resend is ' +
          '200 with its ACK: AA applied (or a message type not used), AE the sender must fix ' +
          'the message (nothing changed), AR unreadable. An inbound ACK is not answered (204). ' +
          'The answer takes the request’s media type, with `charset=utf-8`.',
        tags: ['hl7v2'],
        documented: {
          body: documentedBody(HL7V2_MEDIA_TYPES, MESSAGE),
        },
        response: {
          200: { description: 'The ACK.', content: er7(ACK) },
          204: NO_CONTENT.meta({ description: 'The message was an ACK: no answer.' }),
          ...errorResponses(
            [413, 'The body is larger than `ingest.body_limit_bytes`.'],
            [415, `\`Content-Type\` is not one of ${HL7V2_MEDIA_TYPES.join(', ')}.`],
          ),
        },
      },
    },
    async (request, reply) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      // HTTP names the body's character set in Content-Type; without it, MSH-18 or the default.
      const charset = /;\s*charset="?([^";]+)"?/i.exec(request.headers['content-type'] ?? '')?.[1];
      const result = await handler.handleInput(body, charset?.trim());
      if (result.outcome === 'unavailable') throw new RedisUnavailableError();
      // An inbound ACK is not answered with an ACK: 204, no body.
      if (!result.reply) return reply.code(204).send();
      const type = (request.headers['content-type'] ?? 'text/plain').split(';')[0]?.trim();
      return reply
        .code(200)
        .header('content-type', `${type ?? 'text/plain'}; charset=utf-8`)
        .send(result.ack);
    },
  );
};
