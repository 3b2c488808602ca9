import type { Logger } from 'pino';
import type { Hl7v2Config } from '../../config/config-schema.ts';
import { ReloadingTlsContext } from '../../connections/reloading-tls-context.ts';

/**
 * The MLLP listener's TLS (`hl7v2.mllp.tls`, `MLLP_TLS_*`): undefined without a certificate and
 * key; else their reloading context, with `ca_path` and `client_certificates` for client
 * certificates. Throws a `TlsFilesError` when the files cannot serve.
 */
export function mllpTls(
  tls: Hl7v2Config['mllp']['tls'],
  logger: Logger,
): ReloadingTlsContext | undefined {
  if (tls.cert_path === null || tls.key_path === null) return undefined;
  return new ReloadingTlsContext({
    listener: 'mllp',
    certFile: tls.cert_path,
    keyFile: tls.key_path,
    caFile: tls.ca_path,
    clientCertificates: tls.client_certificates,
    logger,
  });
}
