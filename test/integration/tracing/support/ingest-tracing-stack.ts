import { Registry } from 'prom-client';
import type { Config } from '../../../../src/config/config-schema.ts';
import type { TracingHandle } from '../../../../src/observability/tracing/start-tracing.ts';
import type { RedisClient } from '../../../../src/queues/redis-client.ts';
import { runIngest } from '../../../../src/runtime/run-ingest.ts';
import type { RunningProcess } from '../../../../src/runtime/run-worker.ts';
import {
  MessageReceiptSchema,
  QueryTraceSchema,
  type MessageReceipt,
  type QueryTrace,
} from '../../../../src/trace/message-trace.ts';
import { queryTraceKey } from '../../../../src/trace/trace-keys.ts';
import type { OtlpReceiver, ReceivedSpan } from '../../../support/otlp-receiver.ts';
import { frame, MllpClient } from '../../hl7v2/support/hl7v2-harness.ts';
import { captureLogs, type LogCapture } from '../../../support/log-capture.ts';
import { isolatedIngestConfig, listeningIngestEnv } from '../../../support/ingest-test-config.ts';
import { redisKeys } from '../../../support/scan-redis.ts';

export const TOKEN = 'otel-ingest-token-0123456789';
/** A preset every update runs: each stored message opens (or joins) its query. */
export const RULE_CATEGORY = 'END002';

export interface IngestTracingStack {
  ingest: RunningProcess;
  url: string;
  mllpPort: number;
  logs: LogCapture;
  inspect: RedisClient;
  /** The receipts under a control id, oldest first, wherever its partition. */
  receipts(controlId: string): Promise<MessageReceipt[]>;
  /** The query trace hash of the patient's first query of {@link RULE_CATEGORY}. */
  queryTrace(psid: string): Promise<QueryTrace>;
  close(): Promise<void>;
}

/**
 * `concordance-worker ingest` as the command starts it (runIngest), on real Redis under a test
 * prefix, ports free, one preset rule, and `tracing` as given (undefined: the role starts its own
 * from this process's environment, where no OTEL_* is set: off).
 */
export async function startIngestTracingStack(
  tracing: TracingHandle | undefined,
): Promise<IngestTracingStack> {
  const { env: redis, loaded } = await isolatedIngestConfig(TOKEN, listeningIngestEnv());
  const config: Config = {
    ...loaded,
    hl7v2: { ...loaded.hl7v2, mllp: { ...loaded.hl7v2.mllp, host: '127.0.0.1' } },
    presets: { ...loaded.presets, rules: [{ ccsr_category: RULE_CATEGORY }] },
    terminology: { ...loaded.terminology, sources: [] },
  };
  const logs = captureLogs('debug');
  const ingest = await runIngest(config, logs.logger, {
    registry: new Registry(),
    healthServer: false,
    ...(tracing === undefined ? {} : { tracing }),
  }).catch(async (err: unknown) => {
    await redis.cleanup();
    throw err;
  });
  await ingest.ready;
  const listening = await logs.waitFor((e) => e.msg === 'ingest listening');
  const inspect = redis.redis;
  return {
    ingest,
    url: ingest.url,
    mllpPort: Number(listening.mllp_port),
    logs,
    inspect,
    async receipts(controlId) {
      const keys = (await redisKeys(inspect, redis.prefix)).filter((key) =>
        key.endsWith(`:trace:m:${controlId}`),
      );
      const items = (await Promise.all(keys.map((key) => inspect.lrange(key, 0, -1)))).flat();
      return items.map((item) => MessageReceiptSchema.parse(JSON.parse(item)));
    },
    async queryTrace(psid) {
      // One partition in these tests (the test environment's default).
      const [key] = (await redisKeys(inspect, redis.prefix)).filter((k) =>
        k.endsWith(queryTraceKey('', psid, RULE_CATEGORY, 1)),
      );
      return QueryTraceSchema.parse(key === undefined ? {} : await inspect.hgetall(key));
    },
    async close() {
      await ingest.close();
      await redis.cleanup();
    },
  };
}

/** Sends one MLLP frame and resolves with its ACK. */
export async function sendMllp(port: number, message: string): Promise<string> {
  const client = await MllpClient.open(port);
  client.write(frame(message));
  const [ack] = await client.waitForAcks(1);
  client.socket.destroy();
  return ack ?? '';
}

/** The first span `match` accepts, once it has arrived at the receiver (no polling). */
export async function waitForSpan(
  receiver: OtlpReceiver,
  match: (span: ReceivedSpan) => boolean,
): Promise<ReceivedSpan> {
  for (;;) {
    const found = receiver.spans.find(match);
    if (found !== undefined) return found;
    await receiver.waitForSpans(receiver.spans.length + 1);
  }
}
