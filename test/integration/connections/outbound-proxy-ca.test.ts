import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { serviceClientOptions } from '../../../src/config/service-client-options.ts';
import { outboundAgents } from '../../../src/connections/outbound-agents.ts';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { WebhookClient } from '../../../src/delivery/webhook-client.ts';
import { WebhookSigner } from '../../../src/delivery/webhook-signer.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { FhirClient } from '../../../src/ingest/fhir/fhir-client.ts';
import { createServiceClient } from '../../../src/service/create-service-client.ts';
import { ServiceUnavailableError } from '../../../src/service/errors/service-unavailable-error.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../../tools/webhook-receiver.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import { createTestCertificates, type TestCertificates } from '../../support/test-certificates.ts';
import { CountingProxy } from './support/counting-proxy.ts';

const API_KEY = randomBytes(16).toString('hex');
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const PROXY_USER = 'hospital';
const PROXY_PASSWORD = randomBytes(12).toString('hex');
const FHIR_TOKEN = randomBytes(20).toString('base64url');

const hostOf = (url: string) => new URL(url).host;

function event(id: string): ResultEvent {
  return { id, type: 'concordance.completed', patient_id: 'P-1' } as unknown as ResultEvent;
}

/**
 * Outbound calls in a hospital network: an HTTP proxy (CONNECT for https://) that needs
 * credentials, and endpoints whose certificates a private CA signed.
 */
describe('outbound calls through a proxy and with a custom CA', () => {
  let certs: TestCertificates;
  let proxy: CountingProxy;
  let simulator: CliProcess;
  let simulatorUrl: string;
  let receiver: WebhookReceiver;
  let fhir: Server;
  let fhirUrl: string;

  beforeAll(async () => {
    certs = createTestCertificates();
    proxy = await CountingProxy.start(PROXY_USER, PROXY_PASSWORD);
    simulator = new CliProcess(['simulator', '--port', '0', '--api-key', API_KEY], {});
    simulatorUrl =
      /listening on (\S+)/.exec(await simulator.waitForLine('listening on'))?.[1] ?? '';
    const tls = {
      cert: readFileSync(certs.certFile, 'utf8'),
      key: readFileSync(certs.keyFile, 'utf8'),
    };
    receiver = await startWebhookReceiver({ secret: SECRET, tls });
    fhir = createHttpsServer(tls, (req, res) => {
      const ok =
        req.headers.authorization === `Bearer ${FHIR_TOKEN}` && req.url === '/fhir/Patient/p1';
      res.writeHead(ok ? 200 : 404, { 'content-type': 'application/fhir+json' });
      res.end(JSON.stringify(ok ? { resourceType: 'Patient', id: 'p1' } : {}));
    });
    fhir.listen(0, '127.0.0.1');
    await once(fhir, 'listening');
    fhirUrl = `https://127.0.0.1:${(fhir.address() as AddressInfo).port}/fhir`;
  });
  afterAll(async () => {
    await simulator?.stop();
    await receiver?.close();
    fhir?.closeAllConnections();
    fhir?.close();
    await proxy?.close();
    certs?.remove();
  });

  it("keeps the clients' own defaults when neither a proxy nor a CA file is set", () => {
    const config = loadConfig({ env: { SERVICE_API_KEY: API_KEY } });
    expect(outboundAgents(config.outbound)).toBeUndefined();
    expect(serviceClientOptions(config).dispatcher).toBeUndefined();
  });

  it('the service client reaches the local service through the proxy, and NO_PROXY bypasses it', async () => {
    const env = { SERVICE_BASE_URL: simulatorUrl, SERVICE_API_KEY: API_KEY, HTTP_PROXY: proxy.url };
    const before = proxy.requests.length;
    const client = createServiceClient(serviceClientOptions(loadConfig({ env })));
    const page = await client.relationships.list({ limit: 2 });
    expect(page.data.length).toBeGreaterThan(0);
    expect(proxy.requests.slice(before)).toEqual([
      { kind: 'forward', target: hostOf(simulatorUrl), path: '/v1/relationships' },
    ]);

    const bypass = createServiceClient(
      serviceClientOptions(loadConfig({ env: { ...env, NO_PROXY: '127.0.0.1' } })),
    );
    expect((await bypass.relationships.list({ limit: 2 })).data.length).toBeGreaterThan(0);
    expect(proxy.requests.length).toBe(before + 1);

    // The proxy's own credentials come from the URL: without them it answers 407.
    const refused = createServiceClient(
      serviceClientOptions(
        loadConfig({ env: { ...env, HTTP_PROXY: proxy.urlWithoutCredentials } }),
        {
          retry: { limit: 0 },
        },
      ),
    );
    await expect(refused.relationships.list({ limit: 2 })).rejects.toMatchObject({ status: 407 });
  });

  it('the service client over HTTPS trusts the CA file, directly and through a CONNECT tunnel, and never uses HTTP_PROXY for it', async () => {
    const tls = {
      cert: readFileSync(certs.certFile, 'utf8'),
      key: readFileSync(certs.keyFile, 'utf8'),
    };
    const relationship = { relationship_id: 'r1', from_concept: {}, to_concept: {} };
    const service = createHttpsServer(tls, (req, res) => {
      const ok = req.headers['x-api-key'] === API_KEY && req.url === '/v1/relationships';
      res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { data: [relationship] } : {}));
    });
    service.listen(0, '127.0.0.1');
    await once(service, 'listening');
    const serviceUrl = `https://127.0.0.1:${(service.address() as AddressInfo).port}`;
    const list = (env: Record<string, string>) =>
      createServiceClient(
        serviceClientOptions(
          loadConfig({ env: { SERVICE_BASE_URL: serviceUrl, SERVICE_API_KEY: API_KEY, ...env } }),
          { retry: { limit: 0 } },
        ),
      ).relationships.list();
    try {
      const untrusted = await list({}).catch((e: unknown) => e);
      expect(untrusted).toBeInstanceOf(ServiceUnavailableError);
      expect((untrusted as Error).cause).toMatchObject({
        code: expect.stringMatching(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY/),
      });

      const before = proxy.requests.length;
      const ca = { OUTBOUND_CA_FILE: certs.caFile };
      await expect(list(ca)).resolves.toEqual({ data: [relationship] });
      // HTTP_PROXY is for http:// targets only; NO_PROXY bypasses HTTPS_PROXY.
      await expect(list({ ...ca, HTTP_PROXY: proxy.url })).resolves.toEqual({
        data: [relationship],
      });
      await expect(list({ ...ca, HTTPS_PROXY: proxy.url, NO_PROXY: '127.0.0.1' })).resolves.toEqual(
        { data: [relationship] },
      );
      expect(proxy.requests.length).toBe(before);

      await expect(list({ ...ca, HTTPS_PROXY: proxy.url })).resolves.toEqual({
        data: [relationship],
      });
      expect(proxy.requests.slice(before)).toEqual([
        { kind: 'connect', target: hostOf(serviceUrl) },
      ]);
    } finally {
      service.closeAllConnections();
      service.close();
    }
  });

  it('a webhook over HTTPS is refused without the custom CA and accepted with it, directly and through the proxy', async () => {
    const signer = new WebhookSigner(SECRET);
    const plain = new WebhookClient({ url: receiver.url, timeoutMs: 5_000 });
    const refused = await plain.post(signer.sign(event('evt-no-ca'), new Date()));
    expect(refused.ok).toBe(false);
    expect(refused.ok ? undefined : refused.error.code).toBe('ERR_WEBHOOK_NETWORK');
    expect(refused.ok ? '' : refused.error.message).toMatch(
      /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY/,
    );

    const withCa = loadConfig({ env: { OUTBOUND_CA_FILE: certs.caFile } });
    const direct = new WebhookClient({ url: receiver.url, agent: outboundAgents(withCa.outbound) });
    expect(await direct.post(signer.sign(event('evt-ca'), new Date()))).toEqual({
      ok: true,
      status: 204,
    });

    const before = proxy.requests.length;
    const proxied = loadConfig({ env: { OUTBOUND_CA_FILE: certs.caFile, HTTPS_PROXY: proxy.url } });
    const viaProxy = new WebhookClient({
      url: receiver.url,
      agent: outboundAgents(proxied.outbound),
    });
    expect(await viaProxy.post(signer.sign(event('evt-proxy'), new Date()))).toEqual({
      ok: true,
      status: 204,
    });
    expect(proxy.requests.slice(before)).toEqual([
      { kind: 'connect', target: hostOf(receiver.url) },
    ]);
    expect(receiver.events.map((e) => e.webhookId)).toEqual(['evt-ca', 'evt-proxy']);
  });

  it('the FHIR client reads through the proxy from a server a private CA signed', async () => {
    const config = loadConfig({ env: { OUTBOUND_CA_FILE: certs.caFile, HTTPS_PROXY: proxy.url } });
    const before = proxy.requests.length;
    const client = new FhirClient({
      baseUrl: fhirUrl,
      token: FHIR_TOKEN,
      timeoutMs: 5_000,
      agent: outboundAgents(config.outbound),
    });
    expect(await client.read('Patient', 'p1')).toEqual({ resourceType: 'Patient', id: 'p1' });
    expect(proxy.requests.slice(before)).toEqual([{ kind: 'connect', target: hostOf(fhirUrl) }]);

    const withoutCa = new FhirClient({
      baseUrl: fhirUrl,
      token: FHIR_TOKEN,
      timeoutMs: 5_000,
      retryLimit: 0,
    });
    await expect(withoutCa.read('Patient', 'p1')).rejects.toThrow(/could not be reached/);
  });

  it('start sends its service calls and webhooks through the proxy, trusting the CA file', async () => {
    const redis = await isolatedRedis();
    const dir = mkdtempSync(join(tmpdir(), 'cw-outbound-'));
    writeFileSync(
      join(dir, 'config.yaml'),
      [
        'queries:',
        '  debounce_ms: 100',
        '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
        'delivery:',
        '  outbound_queue: { enabled: false }',
      ].join('\n'),
    );
    const token = randomBytes(24).toString('base64');
    const before = proxy.requests.length;
    const earlier = receiver.events.length;
    const start = new CliProcess(['--config', join(dir, 'config.yaml'), 'start'], {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: redis.prefix,
      SERVICE_BASE_URL: simulatorUrl,
      SERVICE_API_KEY: API_KEY,
      INGEST_TOKENS: token,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: SECRET,
      OUTBOUND_CA_FILE: certs.caFile,
      HTTP_PROXY: proxy.url,
      HTTPS_PROXY: proxy.url,
      INGEST_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      MLLP_PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    });
    try {
      const { url } = JSON.parse(await start.waitForLine('ingest listening')) as { url: string };
      const accepted = await fetch(`${url}/v1/record-updates`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          patient_id: 'PROXY-PATIENT-1',
          event_id: 'evt-proxy-e2e',
          assembled_patient: sampleRecord('proxy'),
          ccsr_categories: ['END002'],
        }),
      });
      expect(accepted.status).toBe(202);
      const delivered = () => receiver.events.slice(earlier);
      await receiver.until(() => delivered().length === 1);
      expect(delivered()[0]?.payload).toMatchObject({ ccsr_category: 'END002' });

      const seen = proxy.requests.slice(before);
      expect(seen.filter((r) => r.kind === 'forward' && r.path === '/v1/concordance')).toHaveLength(
        1,
      );
      expect(seen).toContainEqual({ kind: 'connect', target: hostOf(receiver.url) });
      expect(start.lines.join('\n')).not.toContain(PROXY_PASSWORD);
      expect(await start.stop('SIGTERM')).toBe(0);
    } finally {
      await start.stop('SIGKILL');
      await redis.cleanup();
    }
  });
});
