import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { benchPrefix, CATEGORY, forEachLimit, type BenchContext } from '../support/fixtures.ts';
import { KeepAliveClient } from '../support/http-client.ts';
import { ingestChildEnv, ingestChildSetup } from '../support/ingest-child.ts';
import {
  cliProcess,
  clearRedis,
  freePort,
  processCpuMs,
  processMemory,
  waitForHttp,
} from '../support/processes.ts';
import { MiB, round, summarize, type Summary } from '../support/stats.ts';

export interface MllpSettings {
  patients: number;
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

export const DEFAULT_MLLP: MllpSettings = {
  patients: 300,
  connections: 32,
  seconds: 10,
  warmupSeconds: 3,
};

export interface MllpResult {
  settings: MllpSettings & { setup: string };
  /** Messages answered AA per second over all connections (closed loop). */
  mllp_messages_per_s: number | null;
  answered: number;
  acks: Record<string, number>;
  latency_ms: Summary;
  ingest_rss_mib: number | null;
  /**
   * CPU time per AA-answered message of the ingest process and of the private redis-server
   * (null with a shared Redis): steadier than the rate on a busy machine.
   */
  ingest_cpu_ms_per_message: number | null;
  redis_cpu_ms_per_message: number | null;
}

const TOKEN = 'bench-mllp-token-0123456789abcdef';
const VT = 0x0b;
const FS = 0x1c;
const CR = 0x0d;

/** An ADT^A08 with demographics and two DG1 (ICD-10-CM) for one patient, in ISO 8859-1. */
function adtWithDg1(patient: string, controlId: string): Buffer {
  const text = [
    `MSH|^~\\&|BENCH|HOSP|CW|HOSP|20261123080000||ADT^A08^ADT_A01|${controlId}|P|2.5.1||||||8859/1`,
    `EVN|A08|20261123080000`,
    `PID|1||${patient}^^^HOSP^MR||MÜLLER^JÖRG||19620314|M`,
    `PV1|1|O`,
    `DG1|1||E11.9^Type 2 diabetes mellitus without complications^I10||20250101|F`,
    `DG1|2||I10^Essential (primary) hypertension^I10||20250101|F`,
  ].join('\r');
  return Buffer.concat([Buffer.of(VT), Buffer.from(`${text}\r`, 'latin1'), Buffer.of(FS, CR)]);
}

/** One MLLP connection sending a message and waiting for its ACK, back to back. */
class MllpSender {
  readonly #socket: Socket;
  #buffer = Buffer.alloc(0);
  #waiting: ((ack: string | undefined) => void) | undefined;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      const end = this.#buffer.indexOf(Buffer.of(FS, CR));
      if (end === -1) return;
      const ack = this.#buffer.subarray(1, end).toString('latin1');
      this.#buffer = this.#buffer.subarray(end + 2);
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting?.(ack);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting?.(undefined);
    });
  }

  static async open(port: number): Promise<MllpSender> {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await once(socket, 'connect');
    return new MllpSender(socket);
  }

  /** The MSA-1 of the answer, or `closed` when the connection ended without one. */
  send(message: Buffer): Promise<string> {
    return new Promise((resolve) => {
      this.#waiting = (ack) => resolve(/\rMSA\|([A-Z]{2})/.exec(ack ?? '')?.[1] ?? 'closed');
      this.#socket.write(message);
    });
  }

  close(): void {
    this.#socket.destroy();
  }
}

/**
 * HL7 v2 messages acknowledged per second by one `concordance-worker ingest` process over MLLP:
 * `connections` senders, each sending an ADT^A08 with DG1 segments and waiting for its AA (sent
 * only once the update is durable in Redis) before the next. Every patient has a preset, so each
 * message stores the record and schedules (or joins) a query; no worker runs.
 */
export async function mllpScenario(ctx: BenchContext, settings: MllpSettings): Promise<MllpResult> {
  const prefix = benchPrefix(ctx, 'mllp');
  const port = await freePort();
  const mllpPort = await freePort();
  const proc = cliProcess(
    'ingest',
    ['ingest'],
    ingestChildEnv(ctx, { prefix, token: TOKEN, port, mllpPort }),
  );
  const removeProc = ctx.cleanup.add('ingest (mllp)', () => proc.stop());
  const client = new KeepAliveClient('127.0.0.1', port, { authorization: `Bearer ${TOKEN}` });
  const senders: MllpSender[] = [];
  try {
    // /healthz answers as soon as it listens; /readyz once Redis is reached (the routes 503 until then).
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, proc);
    ctx.say(`mllp: registering ${settings.patients} presets`);
    const patients = Array.from({ length: settings.patients }, (_, i) => `BENCH-HL7-${i}`);
    await forEachLimit(patients, 16, async (id) => {
      const status = await client.send('PUT', `/v1/patients/${id}/presets/${CATEGORY}`);
      if (status !== 201 && status !== 200) throw new Error(`preset PUT answered ${status}`);
    });
    for (let i = 0; i < settings.connections; i += 1) senders.push(await MllpSender.open(mllpPort));

    let seq = 0;
    const run = async (count: number, seconds: number) => {
      const latencies: number[] = [];
      const acks: Record<string, number> = {};
      const start = performance.now();
      const deadline = start + seconds * 1_000;
      await Promise.all(
        senders.slice(0, count).map(async (sender) => {
          while (performance.now() < deadline) {
            const i = seq++;
            const message = adtWithDg1(patients[i % patients.length] ?? '', `BENCH${i}`);
            const sent = performance.now();
            const code = await sender.send(message);
            latencies.push(performance.now() - sent);
            acks[code] = (acks[code] ?? 0) + 1;
            if (code === 'closed') return;
          }
        }),
      );
      return { latencies, acks, elapsed: (performance.now() - start) / 1_000 };
    };

    ctx.say(`mllp: warm-up ${settings.warmupSeconds} s`);
    const warm = await run(Math.min(8, settings.connections), settings.warmupSeconds);
    // A figure of refused messages would be meaningless: every answer must be AA.
    if (Object.keys(warm.acks).some((code) => code !== 'AA')) {
      throw new Error(`mllp: the bench message was not accepted: ${JSON.stringify(warm.acks)}`);
    }
    ctx.say(`mllp: ${settings.connections} connections for ${settings.seconds} s`);
    const cpuBefore = [processCpuMs(proc.pid), processCpuMs(ctx.redis.pid)];
    const measured = await run(settings.connections, settings.seconds);
    const cpuAfter = [processCpuMs(proc.pid), processCpuMs(ctx.redis.pid)];
    const perMessage = (i: number) => {
      const [before, after] = [cpuBefore[i], cpuAfter[i]];
      const answered = measured.acks.AA ?? 0;
      if (before === undefined || after === undefined || answered === 0) return null;
      return round((after - before) / answered, 4);
    };
    const rss = processMemory(proc.pid);
    return {
      settings: {
        ...settings,
        setup: ingestChildSetup(
          ctx,
          `${settings.connections} MLLP connections from the bench process (same 2-core machine), ` +
            'each sending an ADT^A08 (MSH-18 8859/1, PID, PV1, two DG1 in ICD-10-CM) and waiting for its ACK; ' +
            `${settings.patients} patients with preset ${CATEGORY}; no worker running`,
        ),
      },
      mllp_messages_per_s: round((measured.acks.AA ?? 0) / measured.elapsed, 0),
      answered: measured.latencies.length,
      acks: measured.acks,
      latency_ms: summarize(measured.latencies),
      ingest_rss_mib: rss === undefined ? null : round(rss.rss / MiB, 1),
      ingest_cpu_ms_per_message: perMessage(0),
      redis_cpu_ms_per_message: perMessage(1),
    };
  } finally {
    for (const s of senders) s.close();
    client.close();
    await proc.stop();
    removeProc();
    await clearRedis(ctx.redis, prefix);
  }
}
