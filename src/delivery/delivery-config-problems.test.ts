import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/config-error.ts';
import { loadConfig } from '../config/load-config.ts';
import { deliveryConfigProblems } from './delivery-config-problems.ts';

const withQueue = (env: Record<string, string>, enabled: boolean) => {
  const config = loadConfig({ env });
  return {
    ...config,
    delivery: {
      ...config.delivery,
      outbound_queue: { ...config.delivery.outbound_queue, enabled },
    },
  };
};
const paths = (env: Record<string, string>, queue: boolean) =>
  deliveryConfigProblems(withQueue(env, queue)).map((p) => p.path);

describe('deliveryConfigProblems', () => {
  const webhook = {
    WEBHOOK_URL: 'https://hospital.example/hook',
    WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
  };
  const key = { OUTBOUND_KEY: randomBytes(32).toString('base64') };

  it('needs a channel: the webhook, the outbound queue with its key, or both', () => {
    expect(paths({}, false)).toEqual(['delivery']);
    expect(paths(webhook, false)).toEqual([]);
    expect(paths(key, true)).toEqual([]);
    expect(paths({ ...webhook, ...key }, true)).toEqual([]);
  });

  it('refuses an outbound queue without OUTBOUND_KEY, or with a short or malformed one', () => {
    expect(paths({}, true)).toEqual(['delivery.outbound_queue.key']);
    // loadConfig refuses these keys already (secret strength); the delivery check refuses them
    // in a configuration built any other way too.
    const withKey = (outboundKey: string) => {
      const config = withQueue({}, true);
      return {
        ...config,
        delivery: {
          ...config.delivery,
          outbound_queue: { ...config.delivery.outbound_queue, key: outboundKey },
        },
      };
    };
    expect(
      deliveryConfigProblems(withKey(randomBytes(16).toString('base64'))).map((p) => p.path),
    ).toEqual(['delivery.outbound_queue.key']);
    const [problem] = deliveryConfigProblems(withKey('not base64 !'));
    expect(problem?.message).toMatch(/base64 or hex/);
    expect(() => loadConfig({ env: { OUTBOUND_KEY: 'not base64 !' } })).toThrow(/OUTBOUND_KEY/);
  });

  it('takes OUTBOUND_KEYS instead of OUTBOUND_KEY, from the environment only, never both', () => {
    const [oldKey, newKey] = [
      randomBytes(32).toString('base64'),
      randomBytes(32).toString('base64'),
    ];
    const ring = { OUTBOUND_KEYS: `o1:${newKey},0:${oldKey}` };
    expect(loadConfig({ env: ring }).delivery.outbound_queue.keys).toBe(ring.OUTBOUND_KEYS);
    expect(paths(ring, true)).toEqual([]);
    const both = deliveryConfigProblems(withQueue({ ...ring, OUTBOUND_KEY: oldKey }, true));
    expect(both.map((p) => p.path)).toEqual(['delivery.outbound_queue.keys']);
    expect(both[0]?.message).toMatch(/OUTBOUND_KEY and OUTBOUND_KEYS are both set/);
    // A malformed keyring names the entry, never a secret.
    const [malformed] = deliveryConfigProblems(
      withQueue({ OUTBOUND_KEYS: `o1:${newKey},o1:${oldKey}` }, true),
    );
    expect(malformed).toEqual({
      path: 'delivery.outbound_queue.keys',
      message: 'OUTBOUND_KEYS: key id "o1" is listed twice',
    });
    // Each secret is checked as OUTBOUND_KEY is, named by its key id.
    let weak: unknown;
    try {
      loadConfig({ env: { OUTBOUND_KEYS: `o1:${newKey},o2:${'A'.repeat(44)}` } });
    } catch (err) {
      weak = err;
    }
    expect(weak).toBeInstanceOf(ConfigError);
    const problems = (weak as ConfigError).problems;
    expect(problems.map((p) => p.path)).toEqual(['delivery.outbound_queue.keys']);
    expect(problems[0]?.message).toContain('OUTBOUND_KEYS (key id "o2")');
    expect(JSON.stringify(problems)).not.toContain(newKey);
    // A configuration file holding it is refused.
    const file = join(mkdtempSync(join(tmpdir(), 'cw-outbound-keys-')), 'config.yaml');
    writeFileSync(file, `delivery:\n  outbound_queue:\n    keys: "o1:${newKey}"\n`);
    expect(() => loadConfig({ file, env: {} })).toThrow(
      /secrets come only from the environment: set OUTBOUND_KEYS/,
    );
  });
});
