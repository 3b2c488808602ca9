import type { Logger } from 'pino';
import type { ClientCertificates } from './server-tls-material.ts';

export interface ListenerSecurity {
  /** `ingest`, `mllp`. */
  listener: string;
  port: number;
  tls: boolean;
  /** With TLS: whether clients are asked for a certificate. */
  clientCertificates: ClientCertificates;
}

/**
 * Says at start whether a listener is TLS (and asks for client certificates); a plain listener of
 * a production process (`NODE_ENV=production`) is logged at warn: what it receives crosses the
 * network in clear unless a proxy or mesh in front of it ends TLS.
 */
export function logListenerSecurity(
  logger: Logger,
  { listener, port, tls, clientCertificates }: ListenerSecurity,
  env: NodeJS.ProcessEnv = process.env,
): void {
  if (tls) {
    logger.info(
      { listener, port, tls, client_certificates: clientCertificates },
      'listener uses tls',
    );
  } else if (env.NODE_ENV === 'production') {
    logger.warn(
      { listener, port, tls },
      'listener without tls in production: traffic is in clear unless a proxy in front ends tls (docs/transport-security.md)',
    );
  } else {
    logger.info({ listener, port, tls }, 'listener without tls');
  }
}
