import type { Config } from '../config/config-schema.ts';
import { webhookTransportProblems } from '../config/webhook-transport.ts';
import { OutboundKeyError } from './outbound-key-error.ts';
import { outboundKeyringOf } from './outbound-keyring.ts';

/** One reason the delivery configuration cannot work, by config path. */
export interface DeliveryProblem {
  path: string;
  message: string;
}

/**
 * Why results could not be delivered as configured: no channel at all, a webhook without its
 * secret or over plain http:// to another machine without the explicit allowance, an outbound
 * queue without (or with an unusable) `OUTBOUND_KEY` / `OUTBOUND_KEYS`, or with both set. Empty
 * when it can work. `start`/`work` refuse to start on any of these; `config check` lists them.
 */
export function deliveryConfigProblems(config: Pick<Config, 'delivery'>): DeliveryProblem[] {
  const { webhook, outbound_queue: outbound } = config.delivery;
  const problems: DeliveryProblem[] = [];
  if (webhook.url !== null && webhook.secret === undefined) {
    problems.push({
      path: 'delivery.webhook.secret',
      message: 'WEBHOOK_URL is set but WEBHOOK_SECRET is not: webhooks are always signed',
    });
  }
  // loadConfig refuses it already; a configuration built any other way is refused here too.
  problems.push(...webhookTransportProblems(config));
  if (outbound.enabled) {
    if (outbound.key === undefined && outbound.keys === undefined) {
      problems.push({
        path: 'delivery.outbound_queue.key',
        message:
          'the outbound queue is enabled but OUTBOUND_KEY is not set: each event’s patient_id is ' +
          'sealed with it for your consumer. Generate one with `openssl rand -base64 32`',
      });
    } else {
      try {
        outboundKeyringOf(outbound);
      } catch (err) {
        if (!(err instanceof OutboundKeyError)) throw err;
        const path =
          outbound.keys === undefined
            ? 'delivery.outbound_queue.key'
            : 'delivery.outbound_queue.keys';
        problems.push({ path, message: err.message });
      }
    }
  }
  if (!outbound.enabled && webhook.url === null) {
    problems.push({
      path: 'delivery',
      message:
        'no delivery channel is configured, so results would have nowhere to go: set WEBHOOK_URL ' +
        'and WEBHOOK_SECRET (signed webhook), or delivery.outbound_queue.enabled: true and ' +
        'OUTBOUND_KEY (a BullMQ queue your consumer reads), or both',
    });
  }
  return problems;
}
