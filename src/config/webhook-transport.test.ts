import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deliveryConfigProblems } from '../delivery/delivery-config-problems.ts';
import { ConfigError, type ConfigProblem } from './config-error.ts';
import { loadConfig } from './load-config.ts';
import { isLoopbackHost, webhookTransportWarnings } from './webhook-transport.ts';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const webhook = (url: string, more: Record<string, string> = {}) => ({
  WEBHOOK_URL: url,
  WEBHOOK_SECRET: secret(),
  ...more,
});

function problemsOf(load: () => unknown): readonly ConfigProblem[] {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const REMOTE = [
  'http://receiver.hospital.example/hooks/concordance',
  'http://10.0.2.2:8443/hook',
  'http://192.168.1.20/hook',
  // Not loopback, though they look like it: a name is what DNS says it is, 0.0.0.0 is "any".
  'http://localhost.hospital.example/hook',
  'http://127.0.0.1.nip.io/hook',
  'http://0.0.0.0:9/hook',
  'http://[::]:9/hook',
  'http://[::2]/hook',
  'http://[fe80::1]/hook',
];
const LOOPBACK = [
  'http://127.0.0.1:9/hook',
  'http://127.255.10.3/hook',
  'http://localhost:8080/hook',
  'http://LOCALHOST/hook',
  'http://[::1]:9/hook',
  // The URL parser's spellings of 127.0.0.1.
  'http://127.1/hook',
  'http://0x7f000001/hook',
  // IPv4-mapped 127.0.0.1 (the parser writes it [::ffff:7f00:1]).
  'http://[::ffff:127.0.0.1]/hook',
];

describe('an http:// WEBHOOK_URL', () => {
  it('is refused to another machine, naming WEBHOOK_URL and how to allow it', () => {
    for (const url of REMOTE) {
      const problems = problemsOf(() => loadConfig({ env: webhook(url) }));
      expect(problems, url).toMatchObject([
        {
          path: 'delivery.webhook.url',
          message: expect.stringMatching(/^WEBHOOK_URL is plain http:\/\/ to /) as string,
        },
      ]);
      const [problem] = problems;
      expect(problem?.message).toContain('WEBHOOK_ALLOW_PLAIN_HTTP=true');
      expect(problem?.message).toContain('delivery.webhook.allow_plain_http: true');
      expect(problem?.message).toContain('https://');
    }
  });

  it('is accepted to this machine (localhost, 127.0.0.0/8, ::1), without a warning', () => {
    for (const url of LOOPBACK) {
      const config = loadConfig({ env: webhook(url) });
      expect(config.delivery.webhook.allow_plain_http).toBe(false);
      expect(webhookTransportWarnings(config), url).toEqual([]);
    }
  });

  it('is accepted to another machine when WEBHOOK_ALLOW_PLAIN_HTTP or the setting says so, with a warning', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cw-plain-http-')), 'config.yaml');
    writeFileSync(file, 'delivery: { webhook: { allow_plain_http: true } }\n');
    for (const url of REMOTE) {
      for (const config of [
        loadConfig({ env: webhook(url, { WEBHOOK_ALLOW_PLAIN_HTTP: 'true' }) }),
        loadConfig({ file, env: webhook(url) }),
      ]) {
        expect(config.delivery.webhook.allow_plain_http).toBe(true);
        const host = new URL(url).host;
        expect(webhookTransportWarnings(config), url).toEqual([
          { host, message: expect.stringContaining('plain http://') as string },
        ]);
      }
    }
  });

  it('takes WEBHOOK_ALLOW_PLAIN_HTTP as a bool, false by default, and refuses anything else', () => {
    const url = REMOTE[0] ?? '';
    expect(loadConfig({ env: {} }).delivery.webhook.allow_plain_http).toBe(false);
    expect(
      problemsOf(() => loadConfig({ env: webhook(url, { WEBHOOK_ALLOW_PLAIN_HTTP: 'false' }) })),
    ).toHaveLength(1);
    expect(
      problemsOf(() => loadConfig({ env: webhook(url, { WEBHOOK_ALLOW_PLAIN_HTTP: 'maybe' }) })),
    ).toMatchObject([{ path: 'delivery.webhook.allow_plain_http', message: expect.any(String) }]);
  });

  it('is refused by the delivery check too, in a configuration built some other way', () => {
    const config = loadConfig({ env: webhook('https://receiver.hospital.example/hook') });
    const plain = {
      ...config,
      delivery: {
        ...config.delivery,
        webhook: { ...config.delivery.webhook, url: 'http://receiver.hospital.example/hook' },
      },
    };
    expect(deliveryConfigProblems(plain).map((p) => p.path)).toEqual(['delivery.webhook.url']);
    const allowed = {
      ...plain,
      delivery: {
        ...plain.delivery,
        webhook: { ...plain.delivery.webhook, allow_plain_http: true },
      },
    };
    expect(deliveryConfigProblems(allowed)).toEqual([]);
  });
});

describe('an https:// WEBHOOK_URL', () => {
  it('is accepted to any host, without a warning', () => {
    for (const url of [...REMOTE, ...LOOPBACK].map((u) => u.replace(/^http:/, 'https:'))) {
      const config = loadConfig({ env: webhook(url) });
      expect(config.delivery.webhook.url).toBe(url);
      expect(webhookTransportWarnings(config)).toEqual([]);
    }
  });
});

describe('the warning', () => {
  it('names the host only: no path, query, credentials or secret', () => {
    const env = webhook(
      'http://hook-user:hook-pass@receiver.hospital.example:8080/p/SECRET-PATH?t=tok',
      {
        WEBHOOK_ALLOW_PLAIN_HTTP: 'yes',
      },
    );
    const warnings = webhookTransportWarnings(loadConfig({ env }));
    expect(warnings.map((w) => w.host)).toEqual(['receiver.hospital.example:8080']);
    const text = JSON.stringify(warnings);
    for (const secretPart of ['hook-pass', 'hook-user', 'SECRET-PATH', 'tok', env.WEBHOOK_SECRET]) {
      expect(text).not.toContain(secretPart);
    }
  });
});

describe('isLoopbackHost', () => {
  it('is true for every IPv4 address in 127.0.0.0/8 and false for every other', () => {
    fc.assert(
      fc.property(fc.ipV4(), (address) => {
        expect(isLoopbackHost(new URL(`http://${address}/`).hostname)).toBe(
          address.startsWith('127.'),
        );
      }),
    );
  });

  it('is true for ::1 only among IPv6 addresses but the IPv4-mapped loopback ones', () => {
    fc.assert(
      fc.property(fc.ipV6(), (address) => {
        const hostname = new URL(`http://[${address}]/`).hostname;
        const mapped = /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname);
        expect(isLoopbackHost(hostname)).toBe(hostname === '[::1]' || mapped);
      }),
    );
  });
});
