import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { TlsFilesError } from './tls-files-error.ts';

/** Whether a TLS listener asks its clients for a certificate, and whether it must be given. */
export type ClientCertificates = 'none' | 'request' | 'require';

/** The PEM files a TLS listener serves with. */
export interface ServerTlsFiles {
  /** The certificate (chain: the listener's own first). */
  certFile: string;
  keyFile: string;
  /** The CAs that sign client certificates; null when none are asked for. */
  caFile: string | null;
}

/** What the files held when they were read, checked to serve together. */
export interface ServerTlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
  /** The certificate's SHA-256 fingerprint and end of validity: public, for log lines. */
  fingerprint: string;
  notAfter: string;
}

const read = (file: string): Buffer => {
  try {
    return readFileSync(file);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).name;
    throw new TlsFilesError(`cannot read ${file}: ${reason}`, { cause: err });
  }
};

const certificateOf = (file: string, pem: Buffer): X509Certificate => {
  try {
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no certificate');
    return new X509Certificate(pem);
  } catch (err) {
    throw new TlsFilesError(`${file} does not hold PEM certificates`, { cause: err });
  }
};

/**
 * Reads a listener's files and checks that they serve together: PEM certificates, a PEM private
 * key, the certificate made for that key, and a CA bundle of PEM certificates. Throws a
 * {@link TlsFilesError} naming the file at fault (never its content).
 */
export function readServerTlsMaterial(files: ServerTlsFiles): ServerTlsMaterial {
  const cert = read(files.certFile);
  const key = read(files.keyFile);
  const ca = files.caFile === null ? undefined : read(files.caFile);
  const leaf = certificateOf(files.certFile, cert);
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new TlsFilesError(`${files.keyFile} does not hold a PEM private key`, { cause: err });
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new TlsFilesError(
      `the certificate in ${files.certFile} was not made for the private key in ${files.keyFile}`,
    );
  }
  if (files.caFile !== null && ca !== undefined) certificateOf(files.caFile, ca);
  try {
    createSecureContext({ cert, key, ...(ca === undefined ? {} : { ca }) });
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).name;
    throw new TlsFilesError(`${files.certFile} and ${files.keyFile} cannot serve TLS: ${reason}`, {
      cause: err,
    });
  }
  return { cert, key, ca, fingerprint: leaf.fingerprint256, notAfter: leaf.validTo };
}
