import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  redisAnswers as pingAnswers,
  requestConnection,
} from '../../../../src/queues/redis-connections.ts';
import { freePort } from '../../../../tools/local-redis.ts';
import { eventually } from '../../../support/eventually.ts';
import type { TestCertificates } from '../../../support/test-certificates.ts';

/** The ACL user the tests connect as; the default user is switched off. */
export const ACL_USER = 'cw';

/**
 * Rights of {@link ACL_USER}: its own keys and channels, every command but the dangerous ones
 * (`FLUSHALL`, `CONFIG`, `KEYS`, `DEBUG` …) except the few BullMQ and ioredis need.
 */
export const ACL_RULES = ['~{cwtls}*', '&*', '+@all', '-@dangerous', '+info', '+client|setname'];

/** A private `redis-server` that speaks only TLS (client certificates required) and ACL. */
export class TlsRedis {
  readonly url: string;
  readonly #child: ChildProcess;

  private constructor(url: string, child: ChildProcess) {
    this.url = url;
    this.#child = child;
  }

  static async start(certs: TestCertificates, password: string): Promise<TlsRedis> {
    const port = await freePort();
    const child = spawn(
      'redis-server',
      [
        ...['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1'],
        ...['--tls-cert-file', certs.certFile, '--tls-key-file', certs.keyFile],
        ...['--tls-ca-cert-file', certs.caFile, '--tls-auth-clients', 'yes'],
        ...['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
        ...['--user', 'default', 'off'],
        ...['--user', ACL_USER, 'on', `>${password}`, ...ACL_RULES],
      ],
      { stdio: 'ignore' },
    );
    const failed = once(child, 'error').then(([err]) => {
      throw new Error(`could not start redis-server: ${(err as Error).message}`);
    });
    const redis = new TlsRedis(`rediss://${ACL_USER}:${password}@127.0.0.1:${port}`, child);
    const tls = {
      ca_file: certs.caFile,
      cert_file: certs.clientCertFile,
      key_file: certs.clientKeyFile,
    };
    await Promise.race([
      eventually(
        async () => {
          const client = requestConnection({ url: redis.url, tls }, 'tls-probe', {
            retryStrategy: () => null,
          });
          client.on('error', () => undefined);
          try {
            // events.once rejects when the client emits 'error' first (the server is not up
            // yet: ECONNREFUSED): that is a "not yet", not a failure of the test.
            const ready = await Promise.race([
              once(client, 'ready').then(
                () => true,
                () => false,
              ),
              once(client, 'end').then(
                () => false,
                () => false,
              ),
            ]);
            return ready && (await pingAnswers(client));
          } finally {
            client.disconnect();
          }
        },
        (ok) => ok,
        { timeoutMs: 10_000 },
      ),
      failed,
    ]);
    return redis;
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      this.#child.kill('SIGTERM');
      await once(this.#child, 'exit');
    }
  }
}
