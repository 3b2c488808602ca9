import { isIPv4 } from 'node:net';

/**
 * A `NO_PROXY` value, read with the rules of Node.js's built-in proxy support (which the got
 * clients use through `outboundAgents`), so that one setting means the same for every outbound
 * client of the process:
 *
 * - entries are separated by commas, trimmed and compared without regard to case;
 * - `*` bypasses the proxy for every host;
 * - `host` and `host:port` match that host exactly (`example.org` does not cover its subdomains);
 * - `.example.org` matches `example.org` and its subdomains, `*.example.org` the subdomains only;
 * - `10.0.0.1-10.0.0.255` matches the IPv4 addresses of that range.
 */
export class NoProxyList {
  readonly #entries: readonly string[];

  /** @param value - the `NO_PROXY` text; undefined or empty proxies every host. */
  constructor(value: string | undefined) {
    this.#entries =
      value === undefined || value === ''
        ? []
        : value.split(',').map((entry) => entry.trim().toLowerCase());
  }

  /**
   * Whether a request to `hostname` (IPv6 without brackets) on `port` goes direct.
   * @param port - the port actually used (the scheme's default when the URL names none).
   */
  bypasses(hostname: string, port: number): boolean {
    const host = hostname.toLowerCase();
    const hostWithPort = `${host}:${port}`;
    return this.#entries.some(
      (entry) =>
        entry === '*' ||
        entry === host ||
        entry === hostWithPort ||
        (entry.startsWith('.') && inDomain(host, entry.slice(1))) ||
        (entry.startsWith('*.') && host.endsWith(entry.slice(1))) ||
        inIpv4Range(host, entry),
    );
  }
}

/** `host` is `domain` or one of its subdomains. */
function inDomain(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

/** `entry` is a range `a.b.c.d-e.f.g.h` and `host` an IPv4 address inside it. */
function inIpv4Range(host: string, entry: string): boolean {
  if (!entry.includes('-') || !isIPv4(host)) return false;
  const [start = '', end = ''] = entry.split('-').map((part) => part.trim());
  if (!isIPv4(start) || !isIPv4(end)) return false;
  const at = ipv4Number(host);
  return at >= ipv4Number(start) && at <= ipv4Number(end);
}

function ipv4Number(address: string): number {
  return address.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
}
