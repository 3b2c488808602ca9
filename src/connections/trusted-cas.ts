import { readFileSync } from 'node:fs';
import { getCACertificates, rootCertificates } from 'node:tls';

/**
 * The certificates a TLS client trusts when a CA file is configured: Node's default set (its
 * bundled roots, plus `NODE_EXTRA_CA_CERTS` and the system store when Node is told to use them)
 * and the PEM bundle in `caFile`. Adding to the defaults rather than replacing them keeps public
 * endpoints working while a hospital's internal CA (or TLS-inspecting proxy) is trusted too.
 */
export function trustedCas(caFile: string): string[] {
  const defaults =
    typeof getCACertificates === 'function' ? getCACertificates('default') : [...rootCertificates];
  return [...defaults, readFileSync(caFile, 'utf8')];
}
