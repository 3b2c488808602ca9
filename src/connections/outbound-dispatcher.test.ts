import { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import type { OutboundConfig } from '../config/config-schema.ts';
import { outboundDispatcher } from './outbound-dispatcher.ts';

describe('outboundDispatcher', () => {
  it('leaves the service client on its own pool when nothing is configured', () => {
    expect(outboundDispatcher({ ca_file: null, proxy: {} })).toBeUndefined();
    expect(outboundDispatcher({ ca_file: null, proxy: { no_proxy: 'localhost' } })).toBeUndefined();
  });

  it('builds one dispatcher per configuration object, so the clients share connections', () => {
    const config: OutboundConfig = { ca_file: null, proxy: { https: 'http://127.0.0.1:3128' } };
    const dispatcher = outboundDispatcher(config);
    expect(dispatcher).toBeInstanceOf(Dispatcher);
    expect(outboundDispatcher(config)).toBe(dispatcher);
    expect(outboundDispatcher({ ...config })).not.toBe(dispatcher);
  });
});
