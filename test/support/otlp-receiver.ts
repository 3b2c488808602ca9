/**
 * An OTLP/HTTP trace receiver inside the test (node:http on a free port): takes what the product's
 * exporter sends (`POST /v1/traces`, JSON `ExportTraceServiceRequest`, gzip or not), validates it,
 * and keeps the spans and the raw bodies (to search them for planted markers). `waitForSpans(n)`
 * resolves on the request that brings the n-th span, no polling.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';

type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string | number }
  | { doubleValue: number }
  | { arrayValue: { values?: AnyValue[] } }
  | { kvlistValue: { values?: KeyValue[] } }
  | { bytesValue: string }
  | Record<string, never>;
interface KeyValue {
  key: string;
  value?: AnyValue;
}

const anyValue: z.ZodType<AnyValue> = z.lazy(() =>
  z.union([
    z.object({ stringValue: z.string() }),
    z.object({ boolValue: z.boolean() }),
    z.object({ intValue: z.union([z.string().regex(/^-?\d+$/), z.number().int()]) }),
    z.object({ doubleValue: z.number() }),
    z.object({ arrayValue: z.object({ values: z.array(anyValue).optional() }) }),
    z.object({ kvlistValue: z.object({ values: z.array(keyValue).optional() }) }),
    z.object({ bytesValue: z.string() }),
    z.strictObject({}),
  ]),
);
const keyValue: z.ZodType<KeyValue> = z.lazy(() =>
  z.object({ key: z.string(), value: anyValue.optional() }),
);
const hexId = (length: number) => z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`));

const spanSchema = z.object({
  traceId: hexId(32),
  spanId: hexId(16),
  parentSpanId: z.union([hexId(16), z.literal('')]).optional(),
  name: z.string(),
  kind: z.number().int().optional(),
  attributes: z.array(keyValue).optional(),
  events: z
    .array(z.object({ name: z.string(), attributes: z.array(keyValue).optional() }))
    .optional(),
  status: z
    .object({ code: z.number().int().optional(), message: z.string().optional() })
    .optional(),
});
const requestSchema = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes: z.array(keyValue).optional() }).optional(),
        scopeSpans: z
          .array(
            z.object({
              scope: z.object({ name: z.string().optional() }).optional(),
              spans: z.array(spanSchema).optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});

export type PlainValue = string | number | boolean | null | PlainValue[];

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  /** Undefined for a root span. */
  parentSpanId: string | undefined;
  kind: number | undefined;
  attributes: Record<string, PlainValue>;
  events: { name: string; attributes: Record<string, PlainValue> }[];
  statusCode: number | undefined;
  statusMessage: string | undefined;
  /** The resource's attributes (`service.name`, …) and the instrumentation scope's name. */
  resource: Record<string, PlainValue>;
  scope: string | undefined;
}

function plain(value: AnyValue | undefined): PlainValue {
  if (value === undefined) return null;
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('arrayValue' in value) return (value.arrayValue.values ?? []).map(plain);
  if ('bytesValue' in value) return value.bytesValue;
  if ('kvlistValue' in value) return JSON.stringify(record(value.kvlistValue.values));
  return null;
}

function record(list: KeyValue[] | undefined): Record<string, PlainValue> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plain(value)]));
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  return (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
}

export class OtlpReceiver {
  /** Every span received, in arrival order. */
  readonly spans: ReceivedSpan[] = [];
  /** The raw (decompressed) request bodies. */
  readonly bodies: string[] = [];
  /** Requests that were not a valid export (path, content type or body). */
  readonly rejected: string[] = [];
  readonly #server: Server;
  readonly #waiters = new Set<() => void>();

  constructor(server: Server) {
    this.#server = server;
    server.on('request', (req, res) => {
      void this.#handle(req).then(
        (status) => {
          res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
        },
        () => res.writeHead(500).end(),
      );
    });
  }

  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** The traces URL, for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  get tracesUrl(): string {
    return `${this.url}/v1/traces`;
  }

  async #handle(req: IncomingMessage): Promise<number> {
    const body = await bodyOf(req);
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      this.rejected.push(`${req.method} ${req.url}`);
      return 404;
    }
    if (!String(req.headers['content-type']).startsWith('application/json')) {
      this.rejected.push(`content-type ${req.headers['content-type']}`);
      return 415;
    }
    const parsed = requestSchema.safeParse(JSON.parse(body));
    if (!parsed.success) {
      this.rejected.push(parsed.error.message);
      return 400;
    }
    this.bodies.push(body);
    for (const resourceSpans of parsed.data.resourceSpans ?? []) {
      const resource = record(resourceSpans.resource?.attributes);
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({
            name: span.name,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId === '' ? undefined : span.parentSpanId,
            kind: span.kind,
            attributes: record(span.attributes),
            events: (span.events ?? []).map((e) => ({
              name: e.name,
              attributes: record(e.attributes),
            })),
            statusCode: span.status?.code,
            statusMessage: span.status?.message,
            resource,
            scope: scopeSpans.scope?.name,
          });
        }
      }
    }
    for (const wake of this.#waiters) wake();
    return 200;
  }

  /** Resolves with the spans once at least `count` have arrived (rejects after `timeoutMs`). */
  waitForSpans(count: number, { timeoutMs = 30_000 } = {}): Promise<ReceivedSpan[]> {
    if (this.spans.length >= count) return Promise.resolve([...this.spans]);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(wake);
        reject(new Error(`${this.spans.length} of ${count} spans arrived in ${timeoutMs} ms`));
      }, timeoutMs);
      const wake = (): void => {
        if (this.spans.length < count) return;
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve([...this.spans]);
      };
      this.#waiters.add(wake);
    });
  }

  /** The spans whose name is `name`. */
  named(name: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.name === name);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    this.#server.close();
    await once(this.#server, 'close');
  }
}

/** A receiver listening on a free port of 127.0.0.1. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const server = createServer();
  const receiver = new OtlpReceiver(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return receiver;
}
