import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { packageFile } from '../package-root.ts';
import { ConfigError, type ConfigProblem } from './config-error.ts';
import { ConfigSchema, type Config } from './config-schema.ts';
import { issueProblems, withVariables, type EnvSources } from './env-problems.ts';
import { patientKeyProblems, withHospitalMrn } from './patient-key.ts';
import { preventProblems } from './prevent-problems.ts';
import { scaleOutProblems } from './scale-out-problems.ts';
import { secretProblems } from './secret-problems.ts';
import { webhookTransportProblems } from './webhook-transport.ts';

/** The configuration shipped with the project (`config/default.yaml` at the package root). */
export function defaultConfigFile(): URL {
  return packageFile('config/default.yaml');
}

export interface LoadConfigOptions {
  /** A file merged over the defaults (`--config`). */
  file?: string | URL;
  /** @defaultValue `process.env` */
  env?: NodeJS.ProcessEnv;
}

type Tree = Record<string, unknown>;

const isTree = (value: unknown): value is Tree =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key];
    out[key] = isTree(prior) && isTree(value) ? merge(prior, value) : value;
  }
  return out;
}

function readYaml(file: string | URL, problems: ConfigProblem[]): Tree {
  try {
    const parsed: unknown = parseYaml(readFileSync(file, 'utf8'));
    if (parsed === null || parsed === undefined) return {};
    if (isTree(parsed)) return parsed;
    problems.push({ path: '', message: `${String(file)} does not hold a mapping` });
  } catch (err) {
    problems.push({ path: '', message: `cannot read ${String(file)}: ${(err as Error).message}` });
  }
  return {};
}

/** Environment variables and where they go; numbers are parsed so that zod checks them. */
export const ENV_PATHS: readonly [
  variable: string,
  path: readonly string[],
  kind: 'string' | 'int' | 'list' | 'bool',
][] = [
  ['SERVICE_ENV', ['service', 'env'], 'string'],
  ['SERVICE_BASE_URL', ['service', 'base_url'], 'string'],
  ['SERVICE_API_KEY', ['service', 'api_key'], 'string'],
  ['SERVICE_TIMEOUT_MS', ['service', 'timeout_ms'], 'int'],
  ['LOG_LEVEL', ['log', 'level'], 'string'],
  ['REDIS_URL', ['redis', 'url'], 'string'],
  ['REDIS_PREFIX', ['redis', 'prefix'], 'string'],
  ['INGEST_PORT', ['ingest', 'port'], 'int'],
  ['INGEST_HOST', ['ingest', 'host'], 'string'],
  ['INGEST_TOKENS', ['ingest', 'tokens'], 'list'],
  ['ADMIN_TOKENS', ['admin', 'tokens'], 'list'],
  ['QUEUE_VIEW_ENABLED', ['admin', 'queue_view', 'enabled'], 'bool'],
  ['QUEUE_VIEW_TOKENS', ['admin', 'queue_view', 'tokens'], 'list'],
  ['TRACE_ENABLED', ['trace', 'enabled'], 'bool'],
  ['CDS_HOOKS_ENABLED', ['cds_hooks', 'enabled'], 'bool'],
  ['CDS_HOOKS_BASE_URL', ['cds_hooks', 'base_url'], 'string'],
  ['TRACE_RETENTION_DAYS', ['trace', 'retention_days'], 'int'],
  ['TRACE_KEEP_RAW', ['trace', 'keep_raw'], 'bool'],
  ['MLLP_PORT', ['hl7v2', 'mllp', 'port'], 'int'],
  ['CROSSWALK_KEY', ['identity', 'crosswalk_key'], 'string'],
  ['CROSSWALK_KEYS', ['identity', 'crosswalk_keys'], 'string'],
  // One key across feeds (docs/clinical-feeds.md): comma-separated.
  [
    'MRN_HL7V2_AUTHORITIES',
    ['identity', 'patient_key', 'hospital_mrn', 'hl7v2_authorities'],
    'list',
  ],
  [
    'MRN_FHIR_SYSTEMS',
    ['identity', 'patient_key', 'hospital_mrn', 'fhir_identifier_systems'],
    'list',
  ],
  ['PREVENT_ID_KEY', ['prevent', 'id_key'], 'string'],
  ['METRICS_PORT', ['worker', 'metrics_port'], 'int'],
  ['WEBHOOK_URL', ['delivery', 'webhook', 'url'], 'string'],
  ['WEBHOOK_SECRET', ['delivery', 'webhook', 'secret'], 'string'],
  ['WEBHOOK_ALLOW_PLAIN_HTTP', ['delivery', 'webhook', 'allow_plain_http'], 'bool'],
  ['OUTBOUND_KEY', ['delivery', 'outbound_queue', 'key'], 'string'],
  ['OUTBOUND_KEYS', ['delivery', 'outbound_queue', 'keys'], 'string'],
  ['FHIR_BASE_URL', ['fhir', 'base_url'], 'string'],
  ['FHIR_TOKEN', ['fhir', 'token'], 'string'],
  ['TERMINOLOGY_TOKEN', ['terminology', 'server', 'token'], 'string'],
  // Secrets and connections: lower-case proxy variables win, as in curl and Node.
  ['REDIS_TLS_CA_FILE', ['redis', 'tls', 'ca_file'], 'string'],
  ['REDIS_TLS_CERT_FILE', ['redis', 'tls', 'cert_file'], 'string'],
  ['REDIS_TLS_KEY_FILE', ['redis', 'tls', 'key_file'], 'string'],
  ['OUTBOUND_CA_FILE', ['outbound', 'ca_file'], 'string'],
  ['HTTP_PROXY', ['outbound', 'proxy', 'http'], 'string'],
  ['http_proxy', ['outbound', 'proxy', 'http'], 'string'],
  ['HTTPS_PROXY', ['outbound', 'proxy', 'https'], 'string'],
  ['https_proxy', ['outbound', 'proxy', 'https'], 'string'],
  ['NO_PROXY', ['outbound', 'proxy', 'no_proxy'], 'string'],
  ['no_proxy', ['outbound', 'proxy', 'no_proxy'], 'string'],
  ['REDIS_COMMAND_TIMEOUT_MS', ['redis', 'command_timeout_ms'], 'int'],
  // Scale out: Redis Cluster and partitions.
  ['REDIS_CLUSTER_NODES', ['redis', 'cluster_nodes'], 'list'],
  ['REDIS_PARTITIONS', ['redis', 'partitions'], 'int'],
  ['WORKER_PARTITIONS', ['worker', 'partitions'], 'list'],
  ['SHUTDOWN_GRACE_MS', ['shutdown', 'grace_ms'], 'int'],
  // Transport: TLS on the ingest port and on MLLP (docs/transport-security.md).
  ['INGEST_TLS_CERT_FILE', ['ingest', 'tls', 'cert_file'], 'string'],
  ['INGEST_TLS_KEY_FILE', ['ingest', 'tls', 'key_file'], 'string'],
  ['INGEST_TLS_CA_FILE', ['ingest', 'tls', 'ca_file'], 'string'],
  ['INGEST_TLS_CLIENT_CERTIFICATES', ['ingest', 'tls', 'client_certificates'], 'string'],
  ['MLLP_TLS_CERT_FILE', ['hl7v2', 'mllp', 'tls', 'cert_path'], 'string'],
  ['MLLP_TLS_KEY_FILE', ['hl7v2', 'mllp', 'tls', 'key_path'], 'string'],
  ['MLLP_TLS_CA_FILE', ['hl7v2', 'mllp', 'tls', 'ca_path'], 'string'],
  ['MLLP_TLS_CLIENT_CERTIFICATES', ['hl7v2', 'mllp', 'tls', 'client_certificates'], 'string'],
];

/** Values only the environment may set: a file that holds one is refused. */
const SECRETS: readonly (readonly [path: readonly string[], variable: string])[] = [
  [['service', 'api_key'], 'SERVICE_API_KEY'],
  [['ingest', 'tokens'], 'INGEST_TOKENS'],
  [['admin', 'tokens'], 'ADMIN_TOKENS'],
  [['admin', 'queue_view', 'tokens'], 'QUEUE_VIEW_TOKENS'],
  [['identity', 'crosswalk_key'], 'CROSSWALK_KEY'],
  [['identity', 'crosswalk_keys'], 'CROSSWALK_KEYS'],
  [['prevent', 'id_key'], 'PREVENT_ID_KEY'],
  [['delivery', 'webhook', 'secret'], 'WEBHOOK_SECRET'],
  [['delivery', 'outbound_queue', 'key'], 'OUTBOUND_KEY'],
  [['delivery', 'outbound_queue', 'keys'], 'OUTBOUND_KEYS'],
  [['fhir', 'token'], 'FHIR_TOKEN'],
  [['terminology', 'server', 'token'], 'TERMINOLOGY_TOKEN'],
  // A proxy URL may carry a password.
  [['outbound', 'proxy'], 'HTTP_PROXY / HTTPS_PROXY / NO_PROXY'],
];

function has(tree: Tree, path: readonly string[]): boolean {
  const [head, ...rest] = path;
  if (head === undefined || !(head in tree)) return false;
  if (rest.length === 0) return true;
  const branch = tree[head];
  return isTree(branch) && has(branch, rest);
}

/** `true`/`false` (also `1`/`0`, `yes`/`no`, any case); anything else stays text for zod to refuse. */
function boolOf(raw: string): boolean | string {
  const value = raw.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(value)) return true;
  if (['false', '0', 'no'].includes(value)) return false;
  return raw;
}

function fromEnv(env: NodeJS.ProcessEnv): Tree {
  let out: Tree = {};
  for (const [variable, path, kind] of ENV_PATHS) {
    const raw = env[variable];
    if (raw === undefined || raw === '') continue;
    const value =
      kind === 'list'
        ? raw
            .split(',')
            .map((item) => item.trim())
            .filter((item) => item !== '')
        : kind === 'int' && /^-?\d+$/.test(raw.trim())
          ? Number(raw)
          : kind === 'bool'
            ? boolOf(raw)
            : raw;
    out = merge(out, path.reduceRight<unknown>((acc, key) => ({ [key]: acc }), value) as Tree);
  }
  return out;
}

/**
 * Reads the defaults, the `--config` file and the environment, and validates the result once.
 * Throws a {@link ConfigError} listing every problem by path.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const problems: ConfigProblem[] = [];
  let tree = readYaml(defaultConfigFile(), problems);
  if (options.file !== undefined) {
    const overrides = readYaml(options.file, problems);
    for (const [path, variable] of SECRETS) {
      if (has(overrides, path)) {
        problems.push({
          path: path.join('.'),
          message: `secrets come only from the environment: set ${variable}`,
        });
      }
    }
    tree = merge(tree, overrides);
  }
  const env = options.env ?? process.env;
  tree = merge(tree, fromEnv(env));
  if (problems.length > 0) throw new ConfigError(problems);

  // A value from the environment is named by its variable; a secret's value is never quoted.
  const sources: EnvSources = {
    env,
    envPaths: ENV_PATHS,
    secretPaths: SECRETS.map(([path]) => path),
  };
  const parsed = ConfigSchema.safeParse(tree);
  if (!parsed.success) {
    throw new ConfigError(issueProblems(parsed.error.issues, ConfigSchema, sources), {
      cause: parsed.error,
    });
  }
  const config = parsed.data;
  const invalid: ConfigProblem[] = [];
  const chosen = config.service.environments[config.service.env];
  if (config.service.base_url === undefined && chosen.base_url === null) {
    invalid.push({
      path: `service.environments.${config.service.env}.base_url`,
      message: `no base URL for the "${config.service.env}" environment: set it or SERVICE_BASE_URL`,
    });
  }
  if (config.delivery.webhook.url !== null && config.delivery.webhook.secret === undefined) {
    invalid.push({
      path: 'delivery.webhook.secret',
      message: 'WEBHOOK_URL is set but WEBHOOK_SECRET is not: webhooks are always signed',
    });
  }
  invalid.push(...preventProblems(config));
  invalid.push(...secretProblems(config));
  invalid.push(...webhookTransportProblems(config));
  invalid.push(...scaleOutProblems(config));
  invalid.push(...patientKeyProblems(config));
  if (invalid.length > 0) throw new ConfigError(withVariables(invalid, sources));
  // The hospital MRN's HL7 v2 authorities are keyed as unqualified ones (see patient-key.ts).
  return withHospitalMrn(config);
}

/** The base URL in force: `SERVICE_BASE_URL`, else the chosen environment's. */
export function serviceBaseUrl(config: Pick<Config, 'service'>): string {
  const url = config.service.base_url ?? config.service.environments[config.service.env].base_url;
  if (url === null) throw new Error('unreachable: loadConfig checks the base URL');
  return url;
}
