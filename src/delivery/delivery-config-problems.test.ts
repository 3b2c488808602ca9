import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
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
});
