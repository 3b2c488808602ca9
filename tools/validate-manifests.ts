/**
 * Offline validation of rendered Kubernetes manifests (`helm template ... | node
 * tools/validate-manifests.ts -`), as scripts/verify-chart.sh runs it. No cluster is needed:
 *
 * - every apiVersion/kind must be one the chart is allowed to use on current Kubernetes (1.25+):
 *   a removed API (policy/v1beta1, autoscaling/v2beta2, ...) is named with its removal release;
 * - built-in kinds are validated against the OpenAPI schemas bundled in `kubernetes-models`;
 * - ServiceMonitor, PrometheusRule, ScaledObject and TriggerAuthentication (CRDs, no bundled
 *   schema) against the zod schemas below: their required fields, and KEDA's per-trigger metadata;
 * - every pod template meets the "restricted" Pod Security Standard the chart promises
 *   (non-root, no privilege escalation, all capabilities dropped, RuntimeDefault seccomp,
 *   read-only root file system);
 * - references inside the set hold: a Deployment's selector matches its pod labels, probes and
 *   Services name ports the pods declare, a PDB/Service selects some pods, an HPA or ScaledObject
 *   targets a Deployment of the set, a pod's ConfigMap volume is in the set, an Ingress backend is
 *   a Service of the set and one of its ports.
 *
 * Usage: node tools/validate-manifests.ts [--rules-out DIR] [--external Kind/name]... FILE|- ...
 * Prints one line per problem and exits 1 when there is any; with --rules-out, writes the groups
 * of each PrometheusRule as a plain rules file (DIR/<name>.rules.yaml) for `promtool check rules`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { parseAllDocuments, stringify } from 'yaml';
import { z } from 'zod';

/** A rendered object: at least apiVersion, kind and metadata.name (checked). */
export type Manifest = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
};

/** One problem, with the object it is about. */
export interface Problem {
  object: string;
  message: string;
}

/** Built-in kinds the chart may render, with the model that validates each. */
const BUILT_IN: Record<string, new (data: never) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'networking.k8s.io/v1/Ingress': Ingress,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
};

/** API groups/versions removed from Kubernetes, and the release that removed them. */
export const REMOVED_APIS: Record<string, string> = {
  'extensions/v1beta1': '1.16 (workloads) / 1.22 (Ingress)',
  'apps/v1beta1': '1.16',
  'apps/v1beta2': '1.16',
  'networking.k8s.io/v1beta1': '1.22',
  'policy/v1beta1': '1.25',
  'batch/v1beta1': '1.25',
  'autoscaling/v2beta1': '1.25',
  'autoscaling/v2beta2': '1.26',
  'discovery.k8s.io/v1beta1': '1.25',
  'events.k8s.io/v1beta1': '1.25',
  'node.k8s.io/v1beta1': '1.25',
  'storage.k8s.io/v1beta1': '1.22 / 1.27',
  'rbac.authorization.k8s.io/v1beta1': '1.22',
  'scheduling.k8s.io/v1beta1': '1.22',
  'flowcontrol.apiserver.k8s.io/v1beta2': '1.29',
  'flowcontrol.apiserver.k8s.io/v1beta3': '1.32',
};

const duration = z.string().regex(/^(\d+(ms|s|m|h|d|w|y))+$/, 'a Prometheus duration (30s, 5m)');
const labelMap = z.record(z.string(), z.string());

const ServiceMonitorSpec = z.object({
  selector: z.object({
    matchLabels: labelMap.optional(),
    matchExpressions: z.array(z.object({}).loose()).optional(),
  }),
  namespaceSelector: z
    .strictObject({ any: z.boolean().optional(), matchNames: z.array(z.string()).optional() })
    .optional(),
  endpoints: z
    .array(
      z
        .object({
          port: z.string().min(1).optional(),
          targetPort: z.union([z.string().min(1), z.number().int()]).optional(),
          path: z.string().startsWith('/').optional(),
          scheme: z.enum(['http', 'https']).optional(),
          interval: duration.optional(),
          scrapeTimeout: duration.optional(),
        })
        .loose()
        .refine((e) => e.port !== undefined || e.targetPort !== undefined, 'port or targetPort'),
    )
    .min(1),
});

const AlertingRule = z.strictObject({
  alert: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  expr: z.string().min(1),
  for: duration.optional(),
  keep_firing_for: duration.optional(),
  labels: labelMap.optional(),
  annotations: labelMap.optional(),
});
const RecordingRule = z.strictObject({
  record: z.string().regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/),
  expr: z.string().min(1),
  labels: labelMap.optional(),
});
/** An alerting rule when it has `alert`, else a recording rule: each with its own messages. */
const Rule = z.unknown().superRefine((rule, ctx) => {
  const isAlert = typeof rule === 'object' && rule !== null && 'alert' in rule;
  const parsed = (isAlert ? AlertingRule : RecordingRule).safeParse(rule);
  if (parsed.success) return;
  for (const issue of parsed.error.issues)
    ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
});
const PrometheusRuleSpec = z.strictObject({
  groups: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        interval: duration.optional(),
        limit: z.number().int().optional(),
        rules: z.array(Rule).min(1),
      }),
    )
    .min(1),
});

/** KEDA wants every trigger metadata value as a string. */
const TriggerMetadata = z.record(z.string(), z.string());
/** The metadata each trigger type we use cannot do without (KEDA's scaler docs). */
const TRIGGER_REQUIRED: Record<string, readonly (readonly string[])[]> = {
  redis: [['listName'], ['address', 'addressFromEnv', 'host', 'hostFromEnv']],
  'redis-cluster': [['listName'], ['addresses', 'addressesFromEnv', 'hosts', 'hostsFromEnv']],
  prometheus: [['serverAddress'], ['query'], ['threshold']],
  cpu: [['value']],
  memory: [['value']],
};
const ScaledObjectSpec = z.object({
  scaleTargetRef: z.strictObject({
    name: z.string().min(1),
    kind: z.string().optional(),
    apiVersion: z.string().optional(),
    envSourceContainerName: z.string().optional(),
  }),
  minReplicaCount: z.number().int().min(0).optional(),
  maxReplicaCount: z.number().int().min(1).optional(),
  pollingInterval: z.number().int().min(1).optional(),
  cooldownPeriod: z.number().int().min(0).optional(),
  triggers: z
    .array(
      z
        .strictObject({
          type: z.string().min(1),
          name: z.string().optional(),
          metadata: TriggerMetadata,
          authenticationRef: z
            .strictObject({ name: z.string().min(1), kind: z.string().optional() })
            .optional(),
        })
        .superRefine((trigger, ctx) => {
          const required = TRIGGER_REQUIRED[trigger.type];
          if (required === undefined) {
            ctx.addIssue({
              code: 'custom',
              message: `trigger type ${trigger.type} is not checked`,
            });
            return;
          }
          for (const anyOf of required) {
            if (!anyOf.some((key) => (trigger.metadata[key] ?? '') !== '')) {
              ctx.addIssue({
                code: 'custom',
                path: ['metadata'],
                message: `${trigger.type} trigger needs ${anyOf.join(' or ')}`,
              });
            }
          }
        }),
    )
    .min(1),
});
const TriggerAuthenticationSpec = z.object({
  secretTargetRef: z
    .array(
      z.strictObject({
        parameter: z.string().min(1),
        name: z.string().min(1),
        key: z.string().min(1),
      }),
    )
    .min(1),
});

/** The custom resources the chart may render, with the zod schema of their spec. */
const CUSTOM: Record<string, z.ZodType> = {
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitorSpec,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRuleSpec,
  'keda.sh/v1alpha1/ScaledObject': ScaledObjectSpec,
  'keda.sh/v1alpha1/TriggerAuthentication': TriggerAuthenticationSpec,
};

/** Every apiVersion/kind this tool accepts: the current APIs the chart uses. */
export const ALLOWED_KINDS: readonly string[] = [...Object.keys(BUILT_IN), ...Object.keys(CUSTOM)];

const MetaSchema = z.object({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z
    .object({
      name: z
        .string()
        .max(253)
        .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'a DNS subdomain name'),
      labels: z.record(z.string(), z.string()).optional(),
    })
    .loose(),
});

/** The YAML documents of `text`, empty ones left out; a YAML error is thrown with its position. */
export function parseManifests(text: string): unknown[] {
  const docs = parseAllDocuments(text);
  const out: unknown[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error(`YAML: ${doc.errors[0]?.message ?? 'invalid'}`);
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

const describe = (m: { kind?: unknown; metadata?: { name?: unknown } }) =>
  `${String(m.kind)}/${String(m.metadata?.name)}`;

const zodProblems = (object: string, error: z.ZodError): Problem[] =>
  error.issues.map((issue) => ({
    object,
    message: `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`,
  }));

interface Container {
  name: string;
  ports?: { name?: string; containerPort: number }[];
  securityContext?: Record<string, unknown>;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  volumeMounts?: { name: string }[];
}
interface Probe {
  httpGet?: { port: string | number };
  tcpSocket?: { port: string | number };
}
interface PodTemplate {
  metadata?: { labels?: Record<string, string> };
  spec: {
    containers: Container[];
    securityContext?: Record<string, unknown>;
    volumes?: { name: string; configMap?: { name: string } }[];
  };
}

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([key, value]) => labels[key] === value);

/** The "restricted" Pod Security Standard, as far as the chart's pods are concerned. */
function restrictedProblems(object: string, pod: PodTemplate): Problem[] {
  const problems: Problem[] = [];
  const podContext = pod.spec.securityContext ?? {};
  for (const container of pod.spec.containers) {
    const where = `container ${container.name}`;
    const context = container.securityContext ?? {};
    const pick = (key: string) => context[key] ?? podContext[key];
    if (pick('runAsNonRoot') !== true) problems.push({ object, message: `${where}: runAsNonRoot` });
    if (context.allowPrivilegeEscalation !== false)
      problems.push({ object, message: `${where}: allowPrivilegeEscalation must be false` });
    if (context.readOnlyRootFilesystem !== true)
      problems.push({ object, message: `${where}: readOnlyRootFilesystem must be true` });
    const drop = (context.capabilities as { drop?: string[] } | undefined)?.drop ?? [];
    if (!drop.includes('ALL'))
      problems.push({ object, message: `${where}: capabilities must drop ALL` });
    const seccomp = pick('seccompProfile') as { type?: string } | undefined;
    if (seccomp?.type !== 'RuntimeDefault' && seccomp?.type !== 'Localhost')
      problems.push({ object, message: `${where}: seccompProfile RuntimeDefault` });
    if (context.privileged === true) problems.push({ object, message: `${where}: privileged` });
    const names = new Set((container.ports ?? []).map((p) => p.name));
    const numbers = new Set((container.ports ?? []).map((p) => p.containerPort));
    for (const kind of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
      const port = container[kind]?.httpGet?.port ?? container[kind]?.tcpSocket?.port;
      if (port === undefined) continue;
      if (typeof port === 'string' ? !names.has(port) : !numbers.has(port))
        problems.push({
          object,
          message: `${where}: ${kind} port ${port} is not a container port`,
        });
    }
    const volumes = new Set((pod.spec.volumes ?? []).map((v) => v.name));
    for (const mount of container.volumeMounts ?? []) {
      if (!volumes.has(mount.name))
        problems.push({ object, message: `${where}: mounts unknown volume ${mount.name}` });
    }
  }
  return problems;
}

/** Checks one object on its own: its API, its schema, and (pods) the restricted standard. */
export function validateManifest(raw: unknown): Problem[] {
  const meta = MetaSchema.safeParse(raw);
  if (!meta.success) return zodProblems(describe(raw as Manifest), meta.error);
  const m = raw as Manifest;
  const object = describe(m);
  const removedIn = REMOVED_APIS[m.apiVersion];
  if (removedIn !== undefined)
    return [{ object, message: `${m.apiVersion} was removed in Kubernetes ${removedIn}` }];
  const key = `${m.apiVersion}/${m.kind}`;
  const Model = BUILT_IN[key];
  if (Model !== undefined) {
    try {
      new Model(m as never).validate();
    } catch (err) {
      const errors = (err as { errors?: { instancePath: string; message?: string }[] }).errors;
      return (errors ?? [{ instancePath: '', message: (err as Error).message }]).map((e) => ({
        object,
        message: `${e.instancePath || '(root)'}: ${e.message ?? 'invalid'}`,
      }));
    }
    if (m.kind === 'Deployment') {
      const spec = (
        m as unknown as { spec: { selector: { matchLabels?: Record<string, string> } } }
      ).spec;
      const template = (m as unknown as { spec: { template: PodTemplate } }).spec.template;
      const problems = restrictedProblems(object, template);
      if (!matches(spec.selector.matchLabels, template.metadata?.labels ?? {}))
        problems.push({ object, message: 'spec.selector does not match the pod labels' });
      return problems;
    }
    return [];
  }
  const schema = CUSTOM[key];
  if (schema === undefined)
    return [{ object, message: `${key} is not an allowed (current) apiVersion/kind` }];
  const spec = schema.safeParse((m as { spec?: unknown }).spec);
  return spec.success
    ? []
    : zodProblems(object, spec.error).map((p) => ({ ...p, message: `spec.${p.message}` }));
}

/**
 * Checks what one object says about the others of the set (selectors, targets, names).
 * `external` lists `Kind/name` of objects that exist outside the set (e.g. a CA bundle ConfigMap).
 */
export function crossProblems(
  manifests: Manifest[],
  external: ReadonlySet<string> = new Set(),
): Problem[] {
  const problems: Problem[] = [];
  const deployments = manifests.filter((m) => m.kind === 'Deployment') as (Manifest & {
    spec: { template: PodTemplate };
  })[];
  const pods = deployments.map((d) => ({
    name: d.metadata.name,
    labels: d.spec.template.metadata?.labels ?? {},
    ports: d.spec.template.spec.containers.flatMap((c) => c.ports ?? []),
    configMaps: (d.spec.template.spec.volumes ?? []).flatMap((v) =>
      v.configMap ? [v.configMap.name] : [],
    ),
  }));
  const names = (kind: string) =>
    new Set(manifests.filter((m) => m.kind === kind).map((m) => m.metadata.name));
  const configMaps = names('ConfigMap');
  for (const pod of pods) {
    for (const name of pod.configMaps) {
      if (!configMaps.has(name) && !external.has(`ConfigMap/${name}`))
        problems.push({
          object: `Deployment/${pod.name}`,
          message: `ConfigMap ${name} is not rendered`,
        });
    }
  }
  for (const m of manifests) {
    const object = describe(m);
    const spec = (m as { spec?: Record<string, unknown> }).spec ?? {};
    if (m.kind === 'Service') {
      const selected = pods.filter((p) =>
        matches(spec.selector as Record<string, string>, p.labels),
      );
      if (selected.length === 0) {
        problems.push({ object, message: 'selects no pods of the chart' });
        continue;
      }
      for (const port of (spec.ports as { targetPort?: string | number }[] | undefined) ?? []) {
        const target = port.targetPort;
        if (target === undefined) continue;
        const found = selected.every((p) =>
          p.ports.some((q) =>
            typeof target === 'string' ? q.name === target : q.containerPort === target,
          ),
        );
        if (!found)
          problems.push({ object, message: `targetPort ${target} is not a port of its pods` });
      }
    }
    if (m.kind === 'Ingress') problems.push(...ingressBackendProblems(object, spec, manifests));
    if (m.kind === 'PodDisruptionBudget' || m.kind === 'NetworkPolicy') {
      const selector = (spec.selector ?? spec.podSelector) as {
        matchLabels?: Record<string, string>;
      };
      if (!pods.some((p) => matches(selector.matchLabels, p.labels)))
        problems.push({ object, message: 'selects no pods of the chart' });
    }
    if (m.kind === 'HorizontalPodAutoscaler' || m.kind === 'ScaledObject') {
      const ref = spec.scaleTargetRef as { name: string; kind?: string };
      if ((ref.kind ?? 'Deployment') !== 'Deployment' || !names('Deployment').has(ref.name))
        problems.push({
          object,
          message: `scaleTargetRef ${ref.name} is not a Deployment of the set`,
        });
      for (const trigger of (spec.triggers as
        { authenticationRef?: { name: string } }[] | undefined) ?? []) {
        const auth = trigger.authenticationRef?.name;
        if (auth !== undefined && !names('TriggerAuthentication').has(auth))
          problems.push({ object, message: `authenticationRef ${auth} is not rendered` });
      }
    }
  }
  const seen = new Set<string>();
  for (const m of manifests) {
    const id = `${m.kind}/${m.metadata.name}`;
    if (seen.has(id)) problems.push({ object: id, message: 'rendered twice' });
    seen.add(id);
  }
  return problems;
}

interface ServicePort {
  name?: string;
  port: number;
}
interface IngressBackend {
  service?: { name: string; port?: { name?: string; number?: number } };
}

/** An Ingress's backends must be Services of the set, on ports those Services have. */
function ingressBackendProblems(
  object: string,
  spec: Record<string, unknown>,
  manifests: Manifest[],
): Problem[] {
  const rules = (spec.rules ?? []) as { http?: { paths?: { backend: IngressBackend }[] } }[];
  const backends = [
    ...(spec.defaultBackend ? [spec.defaultBackend as IngressBackend] : []),
    ...rules.flatMap((r) => (r.http?.paths ?? []).map((p) => p.backend)),
  ];
  const problems: Problem[] = [];
  for (const backend of backends) {
    if (backend.service === undefined) continue;
    const { name, port } = backend.service;
    const service = manifests.find((m) => m.kind === 'Service' && m.metadata.name === name);
    if (service === undefined) {
      problems.push({ object, message: `backend Service ${name} is not rendered` });
      continue;
    }
    const ports = ((service as { spec?: { ports?: ServicePort[] } }).spec?.ports ?? []).filter(
      (p) => p.name === port?.name || p.port === port?.number,
    );
    if (ports.length === 0)
      problems.push({
        object,
        message: `backend port ${port?.name ?? port?.number} is not a port of Service ${name}`,
      });
  }
  return problems;
}

/** Every problem of a set of documents; the objects that passed their own checks are cross-checked. */
export function validateManifests(
  docs: unknown[],
  external: ReadonlySet<string> = new Set(),
): { problems: Problem[]; kinds: string[] } {
  const problems: Problem[] = [];
  const valid: Manifest[] = [];
  for (const doc of docs) {
    const own = validateManifest(doc);
    problems.push(...own);
    if (own.length === 0) valid.push(doc as Manifest);
  }
  problems.push(...crossProblems(valid, external));
  return {
    problems,
    kinds: docs.map((d) => `${(d as Manifest).apiVersion}/${(d as Manifest).kind}`),
  };
}

/** The rule groups of every PrometheusRule, as plain Prometheus rules files (name -> YAML). */
export function ruleFiles(docs: unknown[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const doc of docs as Manifest[]) {
    if (doc.kind !== 'PrometheusRule') continue;
    const { groups } = (doc as unknown as { spec: { groups: unknown[] } }).spec;
    out.set(`${doc.metadata.name}.rules.yaml`, stringify({ groups }));
  }
  return out;
}

function main(args: string[]): number {
  let rulesOut: string | undefined;
  const external = new Set<string>();
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--rules-out') rulesOut = args[++i];
    else if (args[i] === '--external') external.add(args[++i] ?? '');
    else files.push(args[i] ?? '');
  }
  if (files.length === 0 || files.some((f) => f === '')) {
    console.error(
      'usage: node tools/validate-manifests.ts [--rules-out DIR] [--external Kind/name] FILE|- ...',
    );
    return 2;
  }
  const docs = files.flatMap((file) =>
    parseManifests(readFileSync(file === '-' ? 0 : file, 'utf8')),
  );
  const { problems, kinds } = validateManifests(docs, external);
  for (const p of problems) console.error(`${p.object}: ${p.message}`);
  if (rulesOut !== undefined) {
    mkdirSync(rulesOut, { recursive: true });
    for (const [name, text] of ruleFiles(docs)) writeFileSync(join(rulesOut, name), text);
  }
  const counts = new Map<string, number>();
  for (const kind of kinds) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  const summary = [...counts].map(([kind, n]) => `${n} ${kind}`).join(', ');
  console.log(
    problems.length === 0
      ? `valid: ${docs.length} manifests (${summary})`
      : `INVALID: ${problems.length} problem(s) in ${docs.length} manifests`,
  );
  return problems.length === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    console.error(`validate-manifests: ${(err as Error).message}`);
    process.exitCode = 2;
  }
}
