import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { OutboundConfig } from '../config/config-schema.ts';
import { trustedCas } from './trusted-cas.ts';

/** The agents of outbound calls, in the shape got's `agent` option takes. */
export interface OutboundAgents {
  http?: HttpAgent;
  https?: HttpsAgent;
}

/**
 * True when this Node.js has built-in proxy support in `http.Agent` (`proxyEnv`, in the Node 24
 * line): detected, so that an older Node refuses a proxy instead of silently going direct.
 */
export function builtInProxySupported(): boolean {
  const probe = new HttpAgent({ proxyEnv: { HTTP_PROXY: 'http://127.0.0.1:9' } });
  const supported = Object.getOwnPropertySymbols(probe).some(
    (symbol) => symbol.description === 'kProxyConfig',
  );
  probe.destroy();
  return supported;
}

/** True when `outbound` asks for anything but Node's defaults. */
export function customOutbound(outbound: OutboundConfig): boolean {
  const { proxy } = outbound;
  return outbound.ca_file !== null || proxy.http !== undefined || proxy.https !== undefined;
}

const built = new WeakMap<OutboundConfig, OutboundAgents>();

/**
 * The agents of the got clients (FHIR server, webhook, terminology server): Node's built-in proxy
 * support (`HTTP_PROXY` for http:// targets, `HTTPS_PROXY` for https:// ones through CONNECT,
 * `NO_PROXY` to bypass) and the CA bundle of `outbound.ca_file` on top of Node's roots. Undefined
 * when neither is configured: the clients then keep got's defaults, unchanged. One pair per
 * configuration object, so the clients of one process share their keep-alive connections. The
 * service client speaks undici and gets the same settings from `outboundDispatcher`.
 */
export function outboundAgents(outbound: OutboundConfig): OutboundAgents | undefined {
  if (!customOutbound(outbound)) return undefined;
  const cached = built.get(outbound);
  if (cached !== undefined) return cached;
  const { proxy } = outbound;
  const proxyEnv =
    proxy.http === undefined && proxy.https === undefined
      ? undefined
      : {
          ...(proxy.http === undefined ? {} : { HTTP_PROXY: proxy.http }),
          ...(proxy.https === undefined ? {} : { HTTPS_PROXY: proxy.https }),
          ...(proxy.no_proxy === undefined ? {} : { NO_PROXY: proxy.no_proxy }),
        };
  const ca = outbound.ca_file === null ? undefined : trustedCas(outbound.ca_file);
  const agents: OutboundAgents = {
    ...(proxy.http === undefined ? {} : { http: new HttpAgent({ keepAlive: true, proxyEnv }) }),
    https: new HttpsAgent({
      keepAlive: true,
      ...(proxyEnv === undefined ? {} : { proxyEnv }),
      ...(ca === undefined ? {} : { ca }),
    }),
  };
  built.set(outbound, agents);
  return agents;
}
