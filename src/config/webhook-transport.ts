import type { ConfigProblem } from './config-error.ts';
import { isLoopbackHost as isLoopback } from './loopback-host.ts';
import type { Config } from './config-schema.ts';

/**
 * Whether `hostname` (a URL's) is this machine's loopback: `localhost`, 127.0.0.0/8 or `::1`.
 * Nothing else, not even a `*.localhost` name: what a name resolves to can change.
 */
export function isLoopbackHost(hostname: string): boolean {
  return isLoopback(hostname, { localhostSubdomains: false });
}

/** The webhook URL when it is `http://` to another machine than this one; undefined otherwise. */
function remotePlainHttp(config: Pick<Config, 'delivery'>): URL | undefined {
  const { url } = config.delivery.webhook;
  if (url === null) return undefined;
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' || isLoopbackHost(parsed.hostname)) return undefined;
  return parsed;
}

/**
 * An `http://` WEBHOOK_URL to another machine is refused unless `delivery.webhook.allow_plain_http`
 * (`WEBHOOK_ALLOW_PLAIN_HTTP`) says so: results name patients, and only TLS keeps them (and the
 * signatures' replay window) from the network between. Loopback is always allowed.
 */
export function webhookTransportProblems(config: Pick<Config, 'delivery'>): ConfigProblem[] {
  const remote = remotePlainHttp(config);
  if (remote === undefined || config.delivery.webhook.allow_plain_http) return [];
  return [
    {
      path: 'delivery.webhook.url',
      message:
        `WEBHOOK_URL is plain http:// to ${remote.host}, another machine: results would cross the ` +
        'network unencrypted. Use https://, or set WEBHOOK_ALLOW_PLAIN_HTTP=true ' +
        '(delivery.webhook.allow_plain_http: true) to allow it explicitly',
    },
  ];
}

/** A warning that start-up logs and `config check` prints: what it says, and the receiver's host. */
export interface WebhookTransportWarning {
  message: string;
  /** The URL's host (and port): never its path, query or credentials. */
  host: string;
}

/**
 * The warning for a plain `http://` WEBHOOK_URL to another machine that
 * `delivery.webhook.allow_plain_http` allows; none otherwise.
 */
export function webhookTransportWarnings(
  config: Pick<Config, 'delivery'>,
): WebhookTransportWarning[] {
  const remote = remotePlainHttp(config);
  if (remote === undefined || !config.delivery.webhook.allow_plain_http) return [];
  return [
    {
      host: remote.host,
      message:
        'webhook deliveries go over plain http:// to another machine (allowed by ' +
        'WEBHOOK_ALLOW_PLAIN_HTTP): results cross the network unencrypted; use https://',
    },
  ];
}
