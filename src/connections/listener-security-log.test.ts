import { describe, expect, it } from 'vitest';
import { captureLogs } from '../../test/support/log-capture.ts';
import { logListenerSecurity } from './listener-security-log.ts';

const entries = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('logListenerSecurity', () => {
  it('says a listener uses tls, and whether it asks for client certificates', () => {
    const logs = captureLogs('info');
    logListenerSecurity(
      logs.logger,
      { listener: 'mllp', port: 2575, tls: true, clientCertificates: 'require' },
      { NODE_ENV: 'production' },
    );
    expect(entries(logs.lines)).toEqual([
      expect.objectContaining({
        level: 30,
        listener: 'mllp',
        port: 2575,
        tls: true,
        client_certificates: 'require',
        msg: 'listener uses tls',
      }),
    ]);
  });

  it('warns of a plain listener in production only', () => {
    const logs = captureLogs('info');
    const plain = {
      listener: 'ingest',
      port: 8080,
      tls: false,
      clientCertificates: 'none' as const,
    };
    logListenerSecurity(logs.logger, plain, { NODE_ENV: 'production' });
    logListenerSecurity(logs.logger, plain, { NODE_ENV: 'development' });
    logListenerSecurity(logs.logger, plain, {});
    expect(entries(logs.lines).map((e) => [e.level, e.listener, e.tls])).toEqual([
      [40, 'ingest', false],
      [30, 'ingest', false],
      [30, 'ingest', false],
    ]);
    expect(String(entries(logs.lines)[0]?.msg)).toMatch(/without tls in production/);
  });
});
