import { describe, expect, it } from 'vitest';
import { loadConfig } from './load-config.ts';
import { isLoopbackHost, serviceUrlWarnings } from './service-url-warnings.ts';

const PRODUCTION = { NODE_ENV: 'production' };

describe('isLoopbackHost', () => {
  it('knows localhost, 127.0.0.0/8 and ::1', () => {
    for (const host of [
      'localhost',
      'LOCALHOST',
      'api.localhost',
      '127.0.0.1',
      '127.8.9.10',
      '[::1]',
      '::1',
    ])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of [
      'cgs.example.org',
      '10.0.0.1',
      '128.0.0.1',
      '[2001:db8::1]',
      'localhost.example.org',
    ])
      expect(isLoopbackHost(host), host).toBe(false);
  });
});

describe('serviceUrlWarnings', () => {
  it('warns about the default service.env local in production, naming only the host', () => {
    const config = loadConfig({ env: {} });
    expect(config.service.env).toBe('local');
    expect(serviceUrlWarnings(config, PRODUCTION)).toEqual([
      {
        path: 'service.env',
        host: '127.0.0.1:8090',
        message: expect.stringContaining('NODE_ENV is production but service.env is local'),
      },
    ]);
  });

  it('warns about a loopback SERVICE_BASE_URL in production, without its path or user info', () => {
    const config = loadConfig({
      env: {
        SERVICE_ENV: 'staging',
        SERVICE_BASE_URL: 'http://user:pw-marker@localhost:9000/path-marker',
      },
    });
    const [warning, ...rest] = serviceUrlWarnings(config, PRODUCTION);
    expect(rest).toEqual([]);
    expect(warning).toMatchObject({ path: 'service.base_url', host: 'localhost:9000' });
    expect(JSON.stringify(warning)).not.toMatch(/marker/);
  });

  it('says nothing outside production, or for a base URL elsewhere', () => {
    expect(serviceUrlWarnings(loadConfig({ env: {} }), {})).toEqual([]);
    expect(serviceUrlWarnings(loadConfig({ env: {} }), { NODE_ENV: 'development' })).toEqual([]);
    // The URL in force is what counts: service.env local with SERVICE_BASE_URL elsewhere is fine.
    const elsewhere = loadConfig({ env: { SERVICE_BASE_URL: 'https://cgs.example.org/api' } });
    expect(serviceUrlWarnings(elsewhere, PRODUCTION)).toEqual([]);
  });
});
