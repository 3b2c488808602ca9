import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { RedisClient } from '../../../../src/queues/redis-client.ts';
import { Registry } from 'prom-client';
import type { Config } from '../../../../src/config/config-schema.ts';
import type { Crosswalk } from '../../../../src/identity/crosswalk.ts';
import { startMllpServer, type MllpServer } from '../../../../src/ingest/hl7v2/mllp-server.ts';
import type { PatientAdmin } from '../../../../src/privacy/patient-admin.ts';
import { App } from '../../../../src/app/compose-app.ts';
import { requestConnection } from '../../../../src/queues/redis-connections.ts';
import type { RecordStore } from '../../../../src/records/record-store.ts';
import { captureLogs, type LogCapture } from '../../../support/log-capture.ts';
import { isolatedIngestConfig } from '../../../support/ingest-test-config.ts';
import { testRedisUrl } from '../../../support/redis.ts';
import { PUBLIC_FIXTURES } from '../../../support/public-fixtures.ts';

export const TOKEN = 'hl7v2-test-token-0123456789';
export const FIXTURE_DIR = `${PUBLIC_FIXTURES}hl7v2/`;

export function fixtureNames(): string[] {
  return readdirSync(FIXTURE_DIR)
    .filter((f) => f.endsWith('.hl7'))
    .sort();
}

/** A fixture as stored (LF, BOM, trailing spaces). */
export function fixture(name: string): string {
  return readFileSync(FIXTURE_DIR + name, 'utf8');
}

/** The same with CR segment separators, as the standard sends them. */
export function withCr(text: string): string {
  return text.replace(/\r?\n/g, '\r');
}

export interface Hl7v2Harness {
  config: Config;
  mllp: MllpServer;
  app: FastifyInstance;
  records: RecordStore;
  crosswalk: Crosswalk;
  registry: Registry;
  logs: LogCapture;
  prefix: string;
  inspect: RedisClient;
  /** What A23/A29 call (and the audit log they write). */
  admin: PatientAdmin;
  /** The stored clinical record of a local patient id (undefined when there is none). */
  clinicalOf(localId: string): Promise<Awaited<ReturnType<RecordStore['get']>>>;
  close(): Promise<void>;
}

const ignore = (): void => undefined;

/** A TCP port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface HarnessOptions {
  /** Point the app's Redis at a closed port (transient failures). */
  redisDown?: boolean;
  /** Where the app's Redis is (e.g. a TcpProxy in front of the test Redis). */
  redisUrl?: string;
  hl7v2?: Partial<Config['hl7v2']>;
  mllp?: Partial<Config['hl7v2']['mllp']>;
  /** Map SNOMED CT / ICD-9-CM problems as the ingest process does (`terminology.*`). */
  terminology?: boolean;
}

/**
 * The ingest built by the composition root as `ingest` builds it, on real Redis (test prefix) with
 * a fresh crosswalk key: the MLLP server on a free port and the HTTP app.
 */
export async function startHl7v2Harness(options: HarnessOptions = {}): Promise<Hl7v2Harness> {
  const { env, loaded } = await isolatedIngestConfig(TOKEN);
  const config: Config = {
    ...loaded,
    hl7v2: {
      ...loaded.hl7v2,
      ...options.hl7v2,
      mllp: { ...loaded.hl7v2.mllp, host: '127.0.0.1', ...options.mllp },
    },
    // Without `terminology`, no source: problems are taken as coded.
    ...(options.terminology === true
      ? {}
      : { terminology: { ...loaded.terminology, sources: [] } }),
  };
  const url =
    options.redisDown === true
      ? `redis://127.0.0.1:${await closedPort()}`
      : (options.redisUrl ?? testRedisUrl());
  const redis = requestConnection(url, 'hl7v2-test');
  redis.on('error', ignore);
  if (options.redisDown !== true) {
    if (redis.status !== 'ready') await once(redis, 'ready');
  }
  const prefix = env.prefix;
  const registry = new Registry();
  const logs = captureLogs('trace');
  // Built as `ingest` builds it (src/runtime/run-ingest.ts), on the test's connection.
  const composed = App.compose(config, logs.logger, { redis, registry });
  const { crosswalk, records } = composed;
  const queues = composed.queriesQueues(redis);
  for (const queue of queues) queue.on('error', ignore);
  // Opening the queue writes its meta key: done before the test takes its first look at Redis.
  if (options.redisDown !== true) await Promise.all(queues.map((q) => q.waitUntilReady()));
  const patientAdmin = composed.patientAdmin(queues);
  const { admin } = patientAdmin;
  const parts = composed.ingestParts();
  const mllp = await startMllpServer({
    config: config.hl7v2,
    updates: parts.updates,
    patients: admin,
    registry,
    logger: logs.logger,
    port: 0,
  });
  const app = await composed.ingestApp({ ...parts, admin });
  await app.ready();
  return {
    config,
    mllp,
    app,
    records,
    crosswalk,
    registry,
    logs,
    prefix,
    inspect: env.redis,
    admin,
    async clinicalOf(localId) {
      const psid = await crosswalk.findCurrent(localId);
      return psid === undefined ? undefined : records.get(psid);
    },
    async close() {
      await mllp.close();
      await app.close();
      await patientAdmin.close();
      await Promise.all(queues.map((queue) => queue.close()));
      redis.disconnect();
      await env.cleanup();
    },
  };
}

const VT = 0x0b;
const FS = 0x1c;
const CR = 0x0d;

export function frame(message: string | Buffer): Buffer {
  const body = typeof message === 'string' ? Buffer.from(message, 'utf8') : message;
  return Buffer.concat([Buffer.of(VT), body, Buffer.of(FS, CR)]);
}

/** An MLLP client connection that collects the ACK frames it receives. */
export class MllpClient {
  readonly socket: Socket;
  readonly acks: string[] = [];
  #buffer = Buffer.alloc(0);
  #closed = false;
  #waiters: (() => void)[] = [];
  readonly closedPromise: Promise<void>;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      for (;;) {
        const start = this.#buffer.indexOf(VT);
        const end = this.#buffer.indexOf(Buffer.of(FS, CR));
        if (start === -1 || end === -1) break;
        this.acks.push(this.#buffer.subarray(start + 1, end).toString('utf8'));
        this.#buffer = this.#buffer.subarray(end + 2);
      }
      this.#wake();
    });
    socket.on('error', ignore);
    this.closedPromise = new Promise((resolve) => {
      socket.on('close', () => {
        this.#closed = true;
        this.#wake();
        resolve();
      });
    });
  }

  #wake() {
    for (const w of this.#waiters.splice(0)) w();
  }

  static async open(port: number): Promise<MllpClient> {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await once(socket, 'connect');
    return new MllpClient(socket);
  }

  get closed(): boolean {
    return this.#closed;
  }

  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Resolves when `count` ACKs have arrived in total, or the connection closed first. */
  async waitForAcks(count: number): Promise<string[]> {
    while (this.acks.length < count && !this.#closed) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    return this.acks;
  }

  /** Ends our side and resolves once the server closed the connection. */
  async end(): Promise<void> {
    this.socket.end();
    await this.closedPromise;
  }
}

/** Sends one message over a fresh connection; resolves with its ACK (undefined if closed). */
export async function sendOne(port: number, message: string | Buffer): Promise<string | undefined> {
  const client = await MllpClient.open(port);
  client.write(frame(message));
  const [ack] = await client.waitForAcks(1);
  client.socket.destroy();
  return ack;
}

/** A segment's fields of an ER7 text with CR separators (the ACKs). */
export function segmentOf(ack: string, name: string): string[] {
  const line = ack.split('\r').find((l) => l.startsWith(`${name}|`));
  return line === undefined ? [] : line.split('|');
}

/** MSH-10 of a fixture. */
export function controlIdOf(message: string): string {
  const msh = message.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/)[0] ?? '';
  return msh.split('|')[9] ?? '';
}
