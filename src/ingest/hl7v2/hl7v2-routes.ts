import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../../config/config-schema.ts';
import type { Crosswalk } from '../../identity/crosswalk.ts';
import type { PresetStore } from '../../presets/preset-store.ts';
import type { UpdateCommitter } from '../update-committer.ts';
import type { RecordStore } from '../../records/record-store.ts';
import { ClinicalUpdates } from '../clinical-updates.ts';
import { RedisUnavailableError } from '../errors/redis-unavailable-error.ts';
import { Hl7v2Handler, type ClinicalUpdatesPort, type PatientDeletePort } from './hl7v2-handler.ts';
import { Hl7v2Metrics } from './hl7v2-metrics.ts';

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
  });
  // Encapsulated: the text parsers exist only inside this plugin.
  app.addContentTypeParser(HL7V2_MEDIA_TYPES, { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });
  app.post(HL7V2_ROUTE, async (request, reply) => {
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
  });
};
