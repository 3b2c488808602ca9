import { EventEmitter } from 'node:events';
import { createServer, type IncomingHttpHeaders, type RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got, whether or not its signature held. */
export interface ReceivedAttempt {
  /** The `webhook-id` header (the event id). */
  webhookId: string;
  timestamp: string;
  signature: string;
  /** Every request header, by lower-case name (the first value of a repeated one). */
  headers: Readonly<Record<string, string>>;
  /** The body exactly as received (what the signature covers). */
  rawBody: string;
  /** Whether `standardwebhooks` accepted the signature over the raw body. */
  verified: boolean;
  /** 1 for the first request with this webhook-id, 2 for the next, … */
  attemptOfId: number;
  /** What the receiver answered. */
  status: number;
}

/** An event the receiver verified and acknowledged with a 2xx. */
export interface ReceivedEvent {
  webhookId: string;
  payload: Record<string, unknown>;
  /** When it was acknowledged (epoch ms). */
  receivedAt: number;
}

export interface WebhookReceiverOptions {
  /** The `whsec_…` secret shared with the sender. */
  secret: string;
  /**
   * The status to answer a verified request with (called before answering; a request whose
   * signature fails is always answered 401). @defaultValue () => 204
   */
  respond?: (attempt: Omit<ReceivedAttempt, 'status'>) => number;
  /** PEM certificate and key: the receiver then speaks HTTPS. @defaultValue plain HTTP */
  tls?: { cert: string; key: string };
}

export interface WebhookReceiver {
  url: string;
  /** Every request, in arrival order. */
  readonly attempts: readonly ReceivedAttempt[];
  /** Verified events acknowledged with a 2xx, in arrival order. */
  readonly events: readonly ReceivedEvent[];
  /** Resolves once `condition` holds (checked now and after every request). */
  until(condition: (receiver: WebhookReceiver) => boolean): Promise<void>;
  close(): Promise<void>;
}

const header = (headers: IncomingHttpHeaders, name: string): string => {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
};

/**
 * A real HTTP endpoint that checks Standard Webhooks signatures with the reference verifier, on
 * the raw body, as a hospital's receiver would. For tests and the demo.
 */
export async function startWebhookReceiver({
  secret,
  respond = () => 204,
  tls,
}: WebhookReceiverOptions): Promise<WebhookReceiver> {
  const verifier = new Webhook(secret);
  const attempts: ReceivedAttempt[] = [];
  const events: ReceivedEvent[] = [];
  const perId = new Map<string, number>();
  const changes = new EventEmitter();

  const listener: RequestListener = (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const webhookId = header(request.headers, 'webhook-id');
      const timestamp = header(request.headers, 'webhook-timestamp');
      const signature = header(request.headers, 'webhook-signature');
      let payload: Record<string, unknown> | undefined;
      try {
        payload = verifier.verify(rawBody, {
          'webhook-id': webhookId,
          'webhook-timestamp': timestamp,
          'webhook-signature': signature,
        }) as Record<string, unknown>;
      } catch {
        payload = undefined;
      }
      const attemptOfId = (perId.get(webhookId) ?? 0) + 1;
      perId.set(webhookId, attemptOfId);
      const seen = {
        webhookId,
        headers: Object.fromEntries(
          Object.keys(request.headers).map((name) => [name, header(request.headers, name)]),
        ),
        timestamp,
        signature,
        rawBody,
        verified: payload !== undefined,
        attemptOfId,
      };
      const status = payload === undefined ? 401 : respond(seen);
      attempts.push({ ...seen, status });
      if (payload !== undefined && status >= 200 && status < 300)
        events.push({ webhookId, payload, receivedAt: Date.now() });
      response.writeHead(status).end(() => changes.emit('change'));
    });
  };
  const server = tls === undefined ? createServer(listener) : createHttpsServer(tls, listener);
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;

  const receiver: WebhookReceiver = {
    url: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}/hooks/concordance`,
    attempts,
    events,
    until(condition) {
      if (condition(receiver)) return Promise.resolve();
      return new Promise((resolve) => {
        const check = () => {
          if (!condition(receiver)) return;
          changes.off('change', check);
          resolve();
        };
        changes.on('change', check);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((err) => (err ? reject(err) : resolve())),
      );
    },
  };
  return receiver;
}
