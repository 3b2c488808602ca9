import type { Logger } from 'pino';
import type { Config } from '../config/config-schema.ts';
import { ReloadingTlsContext } from '../connections/reloading-tls-context.ts';

/**
 * HTTPS on the ingest port (`ingest.tls`, `INGEST_TLS_*`): undefined without a certificate and
 * key; else their reloading context, with `ca_file` and `client_certificates` for client
 * certificates. Throws a `TlsFilesError` when the files cannot serve.
 */
export function ingestTls(
  tls: Config['ingest']['tls'],
  logger: Logger,
): ReloadingTlsContext | undefined {
  if (tls.cert_file === null || tls.key_file === null) return undefined;
  return new ReloadingTlsContext({
    listener: 'ingest',
    certFile: tls.cert_file,
    keyFile: tls.key_file,
    caFile: tls.ca_file,
    clientCertificates: tls.client_certificates,
    logger,
  });
}
