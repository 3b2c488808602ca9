import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/**
 * Whether `hostname` (a URL's: IPv6 in brackets or not, any case) is this machine's loopback:
 * `localhost`, 127.0.0.0/8, `::1` or an IPv4-mapped 127.0.0.0/8. With `localhostSubdomains`, also
 * any `*.localhost` name (RFC 6761 reserves them for loopback; a warning may trust that, a refusal
 * does not: what a name resolves to can change). No other name counts, whatever it resolves to.
 */
export function isLoopbackHost(
  hostname: string,
  options: { localhostSubdomains: boolean },
): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost') return true;
  if (options.localhostSubdomains && host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 0) return false;
  return LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6');
}
