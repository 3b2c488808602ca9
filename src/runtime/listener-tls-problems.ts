import type { ConfigProblem } from '../config/config-error.ts';
import type { Config } from '../config/config-schema.ts';
import { pemProblem, type PemKind } from '../connections/pem-problems.ts';
import {
  readServerTlsMaterial,
  type ClientCertificates,
} from '../connections/server-tls-material.ts';

/** One file setting of a listener: its configuration path, variable and value. */
interface FileSetting {
  path: string;
  variable: string;
  file: string | null;
}

/** A TLS listener's settings, with the names that messages give them. */
export interface ListenerTlsSettings {
  /** What the listener is, in messages (`HTTPS on the ingest port`). */
  what: string;
  cert: FileSetting;
  key: FileSetting;
  ca: FileSetting;
  clientCertificates: { path: string; variable: string; value: ClientCertificates };
}

/**
 * What is wrong with a listener's TLS settings, each problem naming the variable to fix: a
 * certificate without its key (or the reverse), a file that is unreadable or not PEM of its kind,
 * a certificate not made for the key, client certificates asked for without a CA to check them (or
 * a CA without asking), or either of those without TLS at all.
 */
export function listenerTlsProblems(settings: ListenerTlsSettings): ConfigProblem[] {
  const { what, cert, key, ca, clientCertificates } = settings;
  const problems: ConfigProblem[] = [];
  const push = (setting: { path: string; variable: string }, message: string) =>
    problems.push({ path: setting.path, message: `${setting.variable}: ${message}` });

  if ((cert.file === null) !== (key.file === null)) {
    const missing = cert.file === null ? cert : key;
    push(missing, `is not set: ${what} needs both a certificate and its key, or neither`);
  }
  const tls = cert.file !== null && key.file !== null;
  const asking = clientCertificates.value !== 'none';
  if (!tls && (ca.file !== null || asking)) {
    push(
      ca.file !== null ? ca : clientCertificates,
      `client certificates need TLS: set ${cert.variable} and ${key.variable} too`,
    );
  } else if (asking && ca.file === null) {
    push(
      ca,
      `is not set, but ${clientCertificates.variable} is ${clientCertificates.value}: give the CAs that sign client certificates`,
    );
  } else if (!asking && ca.file !== null) {
    push(
      clientCertificates,
      `is none, but ${ca.variable} is set: say request or require, or leave the CA file out`,
    );
  }

  const entries: [FileSetting, PemKind][] = [
    [cert, 'certificates'],
    [key, 'private key'],
    [ca, 'certificates'],
  ];
  let readable = true;
  for (const [setting, kind] of entries) {
    if (setting.file === null) continue;
    const problem = pemProblem(setting.file, kind);
    if (problem === undefined) continue;
    readable = false;
    push(setting, problem);
  }
  // Each file is fine alone: do they serve together (the certificate made for the key)?
  if (readable && tls && cert.file !== null && key.file !== null) {
    try {
      readServerTlsMaterial({ certFile: cert.file, keyFile: key.file, caFile: ca.file });
    } catch (err) {
      push(key, (err as Error).message);
    }
  }
  return problems;
}

/** The settings of the ingest port's HTTPS and of MLLP over TLS, as `listenerTlsProblems` takes them. */
export function listenerTlsSettings(config: Config): {
  ingest: ListenerTlsSettings;
  mllp: ListenerTlsSettings;
} {
  const http = config.ingest.tls;
  const mllp = config.hl7v2.mllp.tls;
  return {
    ingest: {
      what: 'HTTPS on the ingest port',
      cert: {
        path: 'ingest.tls.cert_file',
        variable: 'INGEST_TLS_CERT_FILE',
        file: http.cert_file,
      },
      key: { path: 'ingest.tls.key_file', variable: 'INGEST_TLS_KEY_FILE', file: http.key_file },
      ca: { path: 'ingest.tls.ca_file', variable: 'INGEST_TLS_CA_FILE', file: http.ca_file },
      clientCertificates: {
        path: 'ingest.tls.client_certificates',
        variable: 'INGEST_TLS_CLIENT_CERTIFICATES',
        value: http.client_certificates,
      },
    },
    mllp: {
      what: 'MLLP over TLS',
      cert: {
        path: 'hl7v2.mllp.tls.cert_path',
        variable: 'MLLP_TLS_CERT_FILE',
        file: mllp.cert_path,
      },
      key: { path: 'hl7v2.mllp.tls.key_path', variable: 'MLLP_TLS_KEY_FILE', file: mllp.key_path },
      ca: { path: 'hl7v2.mllp.tls.ca_path', variable: 'MLLP_TLS_CA_FILE', file: mllp.ca_path },
      clientCertificates: {
        path: 'hl7v2.mllp.tls.client_certificates',
        variable: 'MLLP_TLS_CLIENT_CERTIFICATES',
        value: mllp.client_certificates,
      },
    },
  };
}
