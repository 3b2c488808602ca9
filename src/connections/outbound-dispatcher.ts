import { Agent, ProxyAgent, type Dispatcher } from 'undici';
import type { OutboundConfig } from '../config/config-schema.ts';
import { NoProxyList } from './no-proxy-list.ts';
import { customOutbound } from './outbound-agents.ts';
import { trustedCas } from './trusted-cas.ts';

/** Origins whose route is remembered; beyond this the route is worked out per request. */
const MAX_REMEMBERED_ORIGINS = 64;

const built = new WeakMap<OutboundConfig, Dispatcher>();

/**
 * The undici dispatcher of the outbound calls made with undici (the service client), built from
 * the same `outbound` configuration as got's `outboundAgents` and meaning the same: an
 * http:// target goes through `HTTP_PROXY` as an absolute-form request, an https:// target through
 * `HTTPS_PROXY` as a CONNECT tunnel (neither falls back on the other), `NO_PROXY` is read as
 * Node.js reads it ({@link NoProxyList}), proxy credentials come from the proxy URL, and
 * `outbound.ca_file` is trusted on top of Node's roots for the target and for an https:// proxy.
 *
 * Undefined when nothing is configured: the client then keeps its own keep-alive pool. One
 * dispatcher per configuration object, so the clients of one process share their connections.
 * undici's connect timeout (10 s) stays on, so a pool does not queue behind a connect that hangs;
 * the service transport counts it as a timeout, and turns the header and body timers off for its
 * own clock.
 */
export function outboundDispatcher(outbound: OutboundConfig): Dispatcher | undefined {
  if (!customOutbound(outbound)) return undefined;
  const cached = built.get(outbound);
  if (cached !== undefined) return cached;
  const { proxy } = outbound;
  const ca = outbound.ca_file === null ? undefined : trustedCas(outbound.ca_file);
  const tls = ca === undefined ? {} : { ca };
  const direct = new Agent({ connect: tls });
  const through = (uri: string | undefined) =>
    uri === undefined ? undefined : new ProxyAgent({ uri, requestTls: tls, proxyTls: tls });
  const proxies = { 'http:': through(proxy.http), 'https:': through(proxy.https) };
  const noProxy = new NoProxyList(proxy.no_proxy);
  const routes = new Map<string, Dispatcher>();
  const routeOf = (origin: string | URL): Dispatcher => {
    const key = String(origin);
    const known = routes.get(key);
    if (known !== undefined) return known;
    const url = new URL(key);
    const proxied = url.protocol === 'https:' ? proxies['https:'] : proxies['http:'];
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const route = proxied === undefined || noProxy.bypasses(hostname, port) ? direct : proxied;
    if (routes.size < MAX_REMEMBERED_ORIGINS) routes.set(key, route);
    return route;
  };
  const dispatcher = direct.compose((dispatch) => (opts, handler) => {
    const route = opts.origin === undefined ? direct : routeOf(opts.origin);
    return route === direct ? dispatch(opts, handler) : route.dispatch(opts, handler);
  });
  built.set(outbound, dispatcher);
  return dispatcher;
}
