import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { describe, expect, it } from 'vitest';
import type { OutboundConfig } from '../config/config-schema.ts';
import { builtInProxySupported, outboundAgents } from './outbound-agents.ts';

const none: OutboundConfig = { ca_file: null, proxy: {} };

describe('outboundAgents', () => {
  it("leaves the clients on got's defaults when nothing is configured", () => {
    expect(outboundAgents(none)).toBeUndefined();
    expect(outboundAgents({ ca_file: null, proxy: { no_proxy: 'localhost' } })).toBeUndefined();
  });

  it('builds an http agent only for an http proxy, and one pair per configuration', () => {
    const config: OutboundConfig = { ca_file: null, proxy: { http: 'http://127.0.0.1:3128' } };
    const agents = outboundAgents(config);
    expect(agents?.http).toBeInstanceOf(HttpAgent);
    expect(agents?.https).toBeInstanceOf(HttpsAgent);
    expect(outboundAgents(config)).toBe(agents);
    expect(outboundAgents({ ...config })).not.toBe(agents);
    const httpsOnly = outboundAgents({ ca_file: null, proxy: { https: 'http://127.0.0.1:3128' } });
    expect(httpsOnly?.http).toBeUndefined();
  });

  it('runs on a Node.js with built-in proxy support (the start-up refuses a proxy otherwise)', () => {
    expect(builtInProxySupported()).toBe(true);
  });
});
