import { describe, expect, it } from 'vitest';
import { NoProxyList } from './no-proxy-list.ts';

describe('NoProxyList', () => {
  it('bypasses nothing when empty or unset', () => {
    expect(new NoProxyList(undefined).bypasses('localhost', 80)).toBe(false);
    expect(new NoProxyList('').bypasses('localhost', 80)).toBe(false);
  });

  it('bypasses every host for *', () => {
    expect(new NoProxyList('internal.example, *').bypasses('cgs.example.org', 443)).toBe(true);
  });

  it('matches a host exactly, without its subdomains, in any case and with spaces around', () => {
    const list = new NoProxyList(' CGS.example.org ,other');
    expect(list.bypasses('cgs.example.org', 443)).toBe(true);
    expect(list.bypasses('CGS.EXAMPLE.ORG', 8443)).toBe(true);
    expect(list.bypasses('api.cgs.example.org', 443)).toBe(false);
    expect(list.bypasses('example.org', 443)).toBe(false);
  });

  it('matches host:port on that port only', () => {
    const list = new NoProxyList('127.0.0.1:8090');
    expect(list.bypasses('127.0.0.1', 8090)).toBe(true);
    expect(list.bypasses('127.0.0.1', 8091)).toBe(false);
  });

  it('matches .domain with the domain itself, *.domain with its subdomains only', () => {
    const dotted = new NoProxyList('.hospital.local');
    expect(dotted.bypasses('hospital.local', 443)).toBe(true);
    expect(dotted.bypasses('cgs.hospital.local', 443)).toBe(true);
    expect(dotted.bypasses('otherhospital.local', 443)).toBe(false);
    const starred = new NoProxyList('*.hospital.local');
    expect(starred.bypasses('cgs.hospital.local', 443)).toBe(true);
    expect(starred.bypasses('hospital.local', 443)).toBe(false);
  });

  it('matches IPv4 addresses inside a range, and nothing else with it', () => {
    const list = new NoProxyList('10.0.0.1 - 10.0.1.255');
    expect(list.bypasses('10.0.0.1', 80)).toBe(true);
    expect(list.bypasses('10.0.1.7', 80)).toBe(true);
    expect(list.bypasses('10.0.2.1', 80)).toBe(false);
    expect(list.bypasses('cgs-10.example', 80)).toBe(false);
    expect(new NoProxyList('a-b').bypasses('10.0.0.1', 80)).toBe(false);
  });

  it('compares IPv6 addresses as written, without brackets', () => {
    expect(new NoProxyList('::1').bypasses('::1', 8090)).toBe(true);
  });
});
