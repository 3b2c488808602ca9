import type { Tracer } from '@opentelemetry/api';
import {
  createServer as createTcpServer,
  type AddressInfo,
  type Server,
  type Socket,
} from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Hl7v2Config } from '../../config/config-schema.ts';
import { logListenerSecurity } from '../../connections/listener-security-log.ts';
import { buildAck } from './ack.ts';
import { encodeText } from './charset.ts';
import { committerOf, FeedTrace } from '../feed-trace.ts';
import { Hl7v2Handler, type ClinicalUpdatesPort, type PatientDeletePort } from './hl7v2-handler.ts';
import { Hl7v2Metrics } from './hl7v2-metrics.ts';
import { inMllpSpan } from './mllp-span.ts';
import { mllpTls } from './mllp-tls.ts';
import { refusalHeaderOf } from './refusal-header.ts';

const VT = 0x0b;
const FS = 0x1c;
const CR = 0x0d;

export interface MllpServerOptions {
  /** `config.hl7v2` (`mllp.port`, `mllp.host`, limits, TLS, patient id rule, transient_reply). */
  config: Hl7v2Config;
  /** The lead's `ClinicalUpdates` (or anything with its `apply` and `merge`). */
  updates: ClinicalUpdatesPort;
  /** A23/A29 deletes (`PatientAdmin`); without it they are answered AE. @defaultValue none */
  patients?: PatientDeletePort;
  /** The ingest app's registry: `cw_hl7v2_messages_total` lives there. */
  registry: Registry;
  logger: Logger;
  /** @defaultValue `config.mllp.port` (0 for any free port). */
  port?: number;
  /** @defaultValue `config.mllp.host` */
  host?: string;
  /**
   * With tracing on: a span per frame (MLLP carries no `traceparent`: each starts its own trace).
   * @defaultValue off: no span work
   */
  tracer?: Tracer | undefined;
}

export interface MllpServer {
  port: number;
  /** Open connections and bytes buffered in them (for tests and diagnostics). */
  stats(): { connections: number; bufferedBytes: number };
  /** Stops accepting, closes every connection, resolves when the server is closed. */
  close(): Promise<void>;
}

interface Connection {
  socket: Socket;
  /** Bytes of the frame being received (after its VT), or undefined outside a frame. */
  frame: Buffer[] | undefined;
  frameBytes: number;
  /** The previous chunk ended with FS inside a frame: a CR first in the next one ends the frame. */
  pendingFs: boolean;
  /** Complete frames to answer, in order; `oversize` ends the connection after its answer. */
  queue: ({ kind: 'message'; body: Buffer } | { kind: 'oversize'; head: string })[];
  busy: boolean;
  /** No more frames are read: the peer ended its side, or a frame was too large. */
  ending: boolean;
  closed: boolean;
}

/**
 * The MLLP listener: VT <message> FS CR frames, buffered across packets, several per connection,
 * answered in order, one ACK per complete frame. A frame longer than `max_message_bytes` is
 * answered AR (with the MSH-10 echoed if the frame starts with a readable MSH) and the connection
 * closed; bytes outside a frame are ignored; a connection idle for `idle_timeout_ms` is closed. On a
 * transient failure (`unavailable`, including a message not stored within `handling_timeout_ms`)
 * the connection is closed without an ACK, or answered AR when `transient_reply` is `AR`. At most
 * `max_connections` connections are held; more are closed at once (and counted). Each message is
 * decoded by its MSH-18 (else `charset.mllp_default`) and its ACK sent back in the same character
 * set; a batch frame (FHS/BHS) is answered with one batch of ACKs, or, when any of its messages
 * could not be stored, not at all (the connection is closed). TLS when
 * `mllp.tls.cert_path` and `key_path` are set, reloaded when they change, with client
 * certificates per `ca_path` and `client_certificates` (see `mllpTls`).
 */
export async function startMllpServer(options: MllpServerOptions): Promise<MllpServer> {
  const { config, logger } = options;
  const metrics = new Hl7v2Metrics(options.registry);
  const handler = new Hl7v2Handler({
    config,
    updates: options.updates,
    ...(options.patients === undefined ? {} : { patients: options.patients }),
    metrics,
    logger,
    transport: 'mllp',
    deadlineMs: config.mllp.handling_timeout_ms,
    defaultCharset: config.charset.mllp_default,
    trace: new FeedTrace({
      feed: 'hl7v2-mllp',
      registry: options.registry,
      committer: committerOf(options.updates),
      logger,
    }),
  });
  const maxBytes = config.mllp.max_message_bytes;
  const connections = new Set<Connection>();

  const closeConnection = (c: Connection) => {
    if (c.closed) return;
    c.closed = true;
    c.frame = undefined;
    c.queue.length = 0;
    c.socket.end();
    c.socket.destroySoon();
  };

  const drain = async (c: Connection) => {
    if (c.busy) return;
    c.busy = true;
    try {
      while (!c.closed) {
        const next = c.queue.shift();
        if (next === undefined) break;
        if (next.kind === 'oversize') {
          refuseOversize(c, next.head);
          break;
        }
        // Bytes, not text: each message is decoded by its own MSH-18 (or the listener default).
        const result = await inMllpSpan(options.tracer, () => handler.handleInput(next.body));
        if (c.closed) break;
        // A batch with a message that could not be stored gets no batch ACK at all.
        if (
          result.outcome === 'unavailable' &&
          (config.transient_reply === 'close' || result.ack === '')
        ) {
          closeConnection(c);
          break;
        }
        if (result.reply) c.socket.write(frameBytes(encodeText(result.ack, result.encoding)));
      }
    } catch (err) {
      // A bug: no ACK, so the sender resends; the cause is logged without the message.
      logger.error({ err: { name: (err as Error).name } }, 'hl7v2 handler failed');
      closeConnection(c);
    } finally {
      c.busy = false;
      if (c.ending && c.queue.length === 0) closeConnection(c);
    }
  };

  const oversize = (c: Connection) => {
    const head = Buffer.concat(c.frame ?? [])
      .subarray(0, 4_096)
      .toString('utf8');
    c.frame = undefined;
    c.frameBytes = 0;
    c.ending = true;
    c.queue.push({ kind: 'oversize', head });
    void drain(c);
  };

  const refuseOversize = (c: Connection, head: string) => {
    // Its MSH (after any leading blank line), else MSH-10 by MSH-1 alone: the AR names the message.
    const { message, controlId } = refusalHeaderOf(head);
    logger.info({ outcome: 'rejected', reason: 'message too large' }, 'hl7v2 frame refused');
    if (message !== undefined || controlId !== undefined) {
      c.socket.write(
        frameOf(
          buildAck(
            message,
            'AR',
            { code: '207', text: `message larger than ${maxBytes} bytes` },
            { charset: 'UNICODE UTF-8', ...(controlId === undefined ? {} : { controlId }) },
          ),
        ),
      );
    }
    closeConnection(c);
  };

  const onData = (c: Connection, chunk: Buffer) => {
    let i = 0;
    while (i < chunk.length && !c.closed && !c.ending) {
      if (c.frame === undefined) {
        const start = chunk.indexOf(VT, i);
        if (start === -1) return;
        c.frame = [];
        c.frameBytes = 0;
        c.pendingFs = false;
        i = start + 1;
        continue;
      }
      if (c.pendingFs) {
        c.pendingFs = false;
        if (chunk[i] === CR) {
          endFrame(c);
          i += 1;
          continue;
        }
        c.frame.push(Buffer.of(FS));
        c.frameBytes += 1;
      }
      let end = -1;
      let j = chunk.indexOf(FS, i);
      while (j !== -1) {
        if (j + 1 >= chunk.length) break;
        if (chunk[j + 1] === CR) {
          end = j;
          break;
        }
        j = chunk.indexOf(FS, j + 1);
      }
      if (end !== -1) {
        append(c, chunk.subarray(i, end));
        if (c.frame === undefined) return;
        endFrame(c);
        i = end + 2;
      } else if (j !== -1) {
        // FS is the last byte of this chunk: its CR may come in the next one.
        append(c, chunk.subarray(i, j));
        if (c.frame === undefined) return;
        c.pendingFs = true;
        return;
      } else {
        append(c, chunk.subarray(i));
        return;
      }
    }
  };

  const append = (c: Connection, bytes: Buffer) => {
    if (c.frame === undefined) return;
    c.frame.push(Buffer.from(bytes));
    c.frameBytes += bytes.length;
    if (c.frameBytes > maxBytes) oversize(c);
  };

  const endFrame = (c: Connection) => {
    const body = Buffer.concat(c.frame ?? []);
    c.frame = undefined;
    c.frameBytes = 0;
    c.queue.push({ kind: 'message', body });
    void drain(c);
  };

  const onConnection = (socket: Socket) => {
    const c: Connection = {
      socket,
      frame: undefined,
      frameBytes: 0,
      pendingFs: false,
      queue: [],
      busy: false,
      ending: false,
      closed: false,
    };
    connections.add(c);
    socket.setTimeout(config.mllp.idle_timeout_ms);
    socket.on('timeout', () => {
      if (!c.busy) {
        logger.info({ reason: 'idle timeout' }, 'mllp connection closed');
        closeConnection(c);
      }
    });
    socket.on('data', (chunk: Buffer) => onData(c, chunk));
    socket.on('error', () => closeConnection(c));
    socket.on('close', () => {
      c.closed = true;
      c.frame = undefined;
      c.queue.length = 0;
      connections.delete(c);
      if (saturated && connections.size < config.mllp.max_connections) saturated = false;
    });
    socket.on('end', () => {
      // The sender finished writing: answer what is queued (drain closes after it), then close.
      c.ending = true;
      c.frame = undefined;
      if (!c.busy && c.queue.length === 0) closeConnection(c);
    });
  };

  const tls = mllpTls(config.mllp.tls, logger);
  let server: Server;
  if (tls === undefined) {
    server = createTcpServer({ allowHalfOpen: true }, onConnection);
  } else {
    const tlsServer = createTlsServer(
      { ...tls.serverOptions(), allowHalfOpen: true },
      onConnection,
    );
    tls.attach(tlsServer);
    server = tlsServer;
  }

  // Over the cap, node closes a new connection at once: logged once until the count falls again.
  server.maxConnections = config.mllp.max_connections;
  let saturated = false;
  server.on('drop', () => {
    metrics.connectionRefused();
    if (saturated) return;
    saturated = true;
    logger.warn(
      { max_connections: config.mllp.max_connections },
      'mllp connection refused: too many open connections',
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? config.mllp.port, options.host ?? config.mllp.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, tls: tls !== undefined }, 'mllp listening');
  logListenerSecurity(logger, {
    listener: 'mllp',
    port,
    tls: tls !== undefined,
    clientCertificates: config.mllp.tls.client_certificates,
  });

  return {
    port,
    stats() {
      let bufferedBytes = 0;
      for (const c of connections) {
        bufferedBytes +=
          c.frameBytes +
          c.queue.reduce((n, q) => n + (q.kind === 'message' ? q.body.length : q.head.length), 0);
      }
      return { connections: connections.size, bufferedBytes };
    },
    async close() {
      tls?.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const c of connections) {
        closeConnection(c);
        c.socket.destroy();
      }
      await closed;
    },
  };
}

/** VT message FS CR. */
export function frameOf(message: string): Buffer {
  return frameBytes(Buffer.from(message, 'utf8'));
}

/**
 * VT bytes FS CR (an ACK already encoded in its message's character set). VT and FS bytes in the
 * ACK (echoed from a malformed message's MSH-10, say) are dropped: an FS before a CR would end
 * the frame early and the sender would read two answers. No supported character set uses these
 * bytes inside a multi-byte character.
 */
export function frameBytes(bytes: Buffer): Buffer {
  const body =
    bytes.includes(VT) || bytes.includes(FS) ? bytes.filter((b) => b !== VT && b !== FS) : bytes;
  return Buffer.concat([Buffer.of(VT), Buffer.from(body), Buffer.of(FS, CR)]);
}
