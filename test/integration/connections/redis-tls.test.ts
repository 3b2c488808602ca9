import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { RedisClient } from '../../../src/queues/redis-client.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { requestConnection, workerConnection } from '../../../src/queues/redis-connections.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { newOutboundKey, OUTBOUND_QUEUE_LINES } from '../../support/outbound.ts';
import { eventually } from '../../support/eventually.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import { createTestCertificates, type TestCertificates } from '../../support/test-certificates.ts';
import { ACL_USER, TlsRedis } from './support/tls-redis.ts';

const PREFIX = '{cwtls}';
const PASSWORD = randomBytes(18).toString('base64url');
const API_KEY = randomBytes(16).toString('hex');
const TOKEN = randomBytes(24).toString('base64');

/** The errors a connection that gives up after one attempt reports until it ends. */
async function refusal(connection: RedisClient): Promise<{ ready: boolean; errors: string[] }> {
  const errors: string[] = [];
  let ready = false;
  connection.on('error', (err: NodeJS.ErrnoException) => errors.push(`${err.code} ${err.message}`));
  connection.on('ready', () => (ready = true));
  await new Promise((resolve) => connection.once('end', resolve));
  return { ready, errors };
}

/**
 * Redis over TLS with an ACL user: a private `redis-server` that requires TLS, a client
 * certificate and a password, and a whole record update through `start` (ingest and workers in
 * one process, BullMQ queues included) and the `status` command over it.
 */
describe('Redis over TLS with an ACL user', () => {
  let certs: TestCertificates;
  let redis: TlsRedis;
  let env: Record<string, string>;

  beforeAll(async () => {
    certs = createTestCertificates();
    redis = await TlsRedis.start(certs, PASSWORD);
    env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: PREFIX,
      REDIS_TLS_CA_FILE: certs.caFile,
      REDIS_TLS_CERT_FILE: certs.clientCertFile,
      REDIS_TLS_KEY_FILE: certs.clientKeyFile,
    };
  });
  afterAll(async () => {
    await redis?.stop();
    certs?.remove();
  });

  it('refuses a connection without the CA, without the client certificate, or with a wrong password', async () => {
    const once = { retryStrategy: () => null };
    const tls = {
      ca_file: certs.caFile,
      cert_file: certs.clientCertFile,
      key_file: certs.clientKeyFile,
    };
    const noCa = await refusal(requestConnection(redis.url, 'no-ca', once));
    expect(noCa.ready).toBe(false);
    expect(noCa.errors.join('\n')).toMatch(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY/);

    const noClientCert = await refusal(
      requestConnection(
        { url: redis.url, tls: { ...tls, cert_file: null, key_file: null } },
        'no-cert',
        once,
      ),
    );
    expect(noClientCert.ready).toBe(false);

    const wrong = await refusal(
      requestConnection(
        { url: redis.url.replace(PASSWORD, 'not-the-password'), tls },
        'wrong',
        once,
      ),
    );
    expect(wrong.errors.join('\n')).toMatch(/WRONGPASS/);

    const plain = await refusal(
      requestConnection(redis.url.replace('rediss:', 'redis:'), 'plain', once),
    );
    expect(plain.ready).toBe(false);

    // And the same options with everything right: ready, and the ACL user's rights hold.
    const good = requestConnection({ url: redis.url, tls }, 'good', once);
    await new Promise((resolve) => good.once('ready', resolve));
    expect(await good.acl('WHOAMI')).toBe(ACL_USER);
    await expect(good.set('outside-the-prefix', '1')).rejects.toThrow(/NOPERM/);
    await expect(good.flushall()).rejects.toThrow(/NOPERM/);
    await good.quit();
  });

  it('runs a record update through ingest and the workers, and status reads the queues', async () => {
    const simulator = new CliProcess(['simulator', '--port', '0', '--api-key', API_KEY], {});
    const simulatorUrl =
      /listening on (\S+)/.exec(await simulator.waitForLine('listening on'))?.[1] ?? '';
    const config = join(mkdtempSync(join(tmpdir(), 'cw-tls-')), 'config.yaml');
    writeFileSync(
      config,
      [
        'queries:',
        '  debounce_ms: 100',
        '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
        ...OUTBOUND_QUEUE_LINES,
      ].join('\n'),
    );
    const start = new CliProcess(['--config', config, 'start'], {
      ...env,
      SERVICE_BASE_URL: simulatorUrl,
      SERVICE_API_KEY: API_KEY,
      INGEST_TOKENS: TOKEN,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      OUTBOUND_KEY: newOutboundKey(),
      INGEST_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      MLLP_PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    });
    const results = new Queue<ResultEvent>('concordance-results', {
      connection: workerConnection(
        {
          url: redis.url,
          tls: {
            ca_file: certs.caFile,
            cert_file: certs.clientCertFile,
            key_file: certs.clientKeyFile,
          },
        },
        'tls-test-results',
      ),
      prefix: PREFIX,
    });
    try {
      const { url } = JSON.parse(await start.waitForLine('ingest listening')) as { url: string };
      const accepted = await fetch(`${url}/v1/record-updates`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          patient_id: 'TLS-PATIENT-1',
          event_id: 'evt-tls-1',
          assembled_patient: sampleRecord('tls'),
          ccsr_categories: ['END002'],
        }),
      });
      expect(accepted.status).toBe(202);
      const [event] = await eventually(
        async () => (await results.getJobs(['wait', 'active', 'completed'])).map((j) => j.data),
        (events) => events.length === 1,
        { timeoutMs: 30_000 },
      );
      expect(event).toMatchObject({
        type: 'concordance.completed',
        ccsr_category: 'END002',
        triggered_by: { event_ids: ['evt-tls-1'] },
      });

      const status = new CliProcess(['status', '--json'], env);
      expect(await status.exited).toBe(0);
      expect(status.stdout.join('\n')).toContain('concordance-queries');

      expect(await start.stop('SIGTERM')).toBe(0);
      expect(start.lines.join('\n')).not.toContain(PASSWORD);
    } finally {
      await start.stop('SIGKILL');
      await simulator.stop('SIGTERM');
      await results.close();
      await results.disconnect();
    }
  });
});
