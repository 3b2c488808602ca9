import type { Config } from './config-schema.ts';
import { serviceBaseUrl } from './load-config.ts';
import { isLoopbackHost as isLoopback } from './loopback-host.ts';

/** True for `localhost` (and `*.localhost`), 127.0.0.0/8 and ::1. */
export function isLoopbackHost(hostname: string): boolean {
  return isLoopback(hostname, { localhostSubdomains: true });
}

/** One warning about the service's base URL. */
export interface ServiceUrlWarning {
  /** The setting at fault: `service.env` or `service.base_url`. */
  path: 'service.env' | 'service.base_url';
  message: string;
  /** The base URL's `host[:port]` (never a path, a query or user info). */
  host: string;
}

/**
 * What `config check` (and a worker's start-up log) warns about, still calling the configuration
 * valid, in a production process (`NODE_ENV=production`): a service base URL in force on this
 * machine — `service.env: local` (the default) without SERVICE_BASE_URL, or a loopback address —
 * which in production is almost always a forgotten SERVICE_ENV or SERVICE_BASE_URL: every
 * submission then fails. `service.env: local` with SERVICE_BASE_URL set elsewhere is not warned
 * about (the URL in force is what matters).
 */
export function serviceUrlWarnings(
  config: Pick<Config, 'service'>,
  env: NodeJS.ProcessEnv = process.env,
): ServiceUrlWarning[] {
  if (env.NODE_ENV !== 'production') return [];
  let host: string;
  let hostname: string;
  try {
    ({ host, hostname } = new URL(serviceBaseUrl(config)));
  } catch {
    return [];
  }
  const local = config.service.base_url === undefined && config.service.env === 'local';
  if (!local && !isLoopbackHost(hostname)) return [];
  const advice =
    'set SERVICE_ENV (and its base_url) or SERVICE_BASE_URL to the Clinical Graph Service';
  return [
    local
      ? {
          path: 'service.env',
          message: `NODE_ENV is production but service.env is local: queries go to ${host} on this machine; ${advice}`,
          host,
        }
      : {
          path: 'service.base_url',
          message: `NODE_ENV is production but the service base URL is a loopback address (${host}); ${advice}`,
          host,
        },
  ];
}
