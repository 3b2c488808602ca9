import { ConfigError, type ConfigProblem } from '../config/config-error.ts';
import { deliveryConfigProblems } from '../delivery/delivery-config-problems.ts';
import type { Config } from '../config/config-schema.ts';
import { builtInProxySupported } from '../connections/outbound-agents.ts';
import { pemProblem, type PemKind } from '../connections/pem-problems.ts';
import { listenerTlsProblems, listenerTlsSettings } from './listener-tls-problems.ts';
import { keyringOf } from '../identity/crosswalk-keyring.ts';

/** The long-running roles: `ingest`, `work`, and `start` (both in one process). */
export const ROLES = ['ingest', 'work', 'start'] as const;
export type Role = (typeof ROLES)[number];

const runsIngest = (role: Role) => role === 'ingest' || role === 'start';
const runsWorkers = (role: Role) => role === 'work' || role === 'start';

function files(
  problems: ConfigProblem[],
  entries: readonly [path: string, file: string | null, kind: PemKind][],
): void {
  for (const [path, file, kind] of entries) {
    if (file === null) continue;
    const problem = pemProblem(file, kind);
    if (problem !== undefined) problems.push({ path, message: problem });
  }
}

function pair(
  problems: ConfigProblem[],
  [certPath, cert]: [string, string | null],
  [keyPath, key]: [string, string | null],
  what: string,
): void {
  if ((cert === null) !== (key === null)) {
    problems.push({
      path: cert === null ? certPath : keyPath,
      message: `${what}: set both the certificate and its key, or neither`,
    });
  }
}

/**
 * Everything a role needs beyond a valid configuration (which `loadConfig` already checked,
 * secret strength included): its secrets, its files, a delivery channel. `config check --role`
 * and the role's start-up both call this, so that they agree; every problem is listed by path.
 */
export function roleProblems(config: Config, role: Role): ConfigProblem[] {
  const problems: ConfigProblem[] = [];

  try {
    if (keyringOf(config.identity) === undefined) {
      problems.push({
        path: 'identity.crosswalk_key',
        message:
          'CROSSWALK_KEY is not set: it encrypts the patient id crosswalk and the stored records. ' +
          'Generate one with `openssl rand -base64 32` and keep it safe: without it the crosswalk cannot be read.',
      });
    }
  } catch (err) {
    const path =
      config.identity.crosswalk_keys === undefined
        ? 'identity.crosswalk_key'
        : 'identity.crosswalk_keys';
    problems.push({ path, message: (err as Error).message });
  }

  // Redis: TLS files only mean something with rediss://.
  const { tls } = config.redis;
  const tlsFilesSet = tls.ca_file !== null || tls.cert_file !== null || tls.key_file !== null;
  if (tlsFilesSet && !/^rediss:/i.test(config.redis.url)) {
    problems.push({
      path: 'redis.url',
      message:
        'REDIS_TLS_* files are set but REDIS_URL is not rediss://: Redis would be reached without TLS',
    });
  }
  pair(
    problems,
    ['redis.tls.cert_file', tls.cert_file],
    ['redis.tls.key_file', tls.key_file],
    'Redis client certificate',
  );
  files(problems, [
    ['redis.tls.ca_file', tls.ca_file, 'certificates'],
    ['redis.tls.cert_file', tls.cert_file, 'certificates'],
    ['redis.tls.key_file', tls.key_file, 'private key'],
  ]);

  // Outbound calls (service, FHIR server, webhook).
  files(problems, [['outbound.ca_file', config.outbound.ca_file, 'certificates']]);
  const { proxy } = config.outbound;
  if ((proxy.http !== undefined || proxy.https !== undefined) && !builtInProxySupported()) {
    problems.push({
      path: 'outbound.proxy',
      message: `HTTP(S)_PROXY is set but Node.js ${process.version} has no built-in proxy support (http.Agent proxyEnv): run a current Node.js 24`,
    });
  }

  if (runsIngest(role)) {
    if (config.ingest.tokens === undefined || config.ingest.tokens.length === 0) {
      problems.push({
        path: 'ingest.tokens',
        message:
          'INGEST_TOKENS is not set: give the integration engine a bearer token (comma-separated for several)',
      });
    }
    const view = config.admin.queue_view;
    if (view.enabled && (view.tokens === undefined || view.tokens.length === 0)) {
      problems.push({
        path: 'admin.queue_view.tokens',
        message:
          'the queue view is enabled (QUEUE_VIEW_ENABLED) but QUEUE_VIEW_TOKENS is not set: give it a token of its own',
      });
    }
    // TLS on the ingest port and on MLLP: the files, their pairing, client certificates.
    const listeners = listenerTlsSettings(config);
    problems.push(...listenerTlsProblems(listeners.ingest));
    if (config.hl7v2.mllp.enabled) problems.push(...listenerTlsProblems(listeners.mllp));
  }

  if (runsWorkers(role)) {
    if (config.service.api_key === undefined) {
      problems.push({
        path: 'service.api_key',
        message: 'SERVICE_API_KEY is not set: the workers cannot call the service',
      });
    }
    if (config.prevent.enabled && config.prevent.id_key === undefined) {
      problems.push({
        path: 'prevent.id_key',
        message:
          'PREVENT_ID_KEY is not set but prevent.enabled is: it keys the pseudonymous identifier ' +
          'Prevent registers each patient with. Generate one with `openssl rand -base64 32`, keep it ' +
          'safe and never change it (docs/prevent.md)',
      });
    }
    // Results with nowhere to go, a webhook without its secret, an outbound queue without its key.
    problems.push(...deliveryConfigProblems(config));
  }
  return problems;
}

/** Throws a {@link ConfigError} listing every problem {@link roleProblems} finds for `role`. */
export function assertRoleConfig(config: Config, role: Role): void {
  const problems = roleProblems(config, role);
  if (problems.length > 0) throw new ConfigError(problems);
}
