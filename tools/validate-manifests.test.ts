import { describe, expect, it } from 'vitest';
import {
  crossProblems,
  parseManifests,
  ruleFiles,
  validateManifest,
  validateManifests,
  type Manifest,
} from './validate-manifests.ts';

const labels = { 'app.kubernetes.io/name': 'cw', 'app.kubernetes.io/component': 'worker' };

/** A Deployment that passes every check; tests break one thing at a time. */
function deployment(): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'cw-worker', labels },
    spec: {
      replicas: 2,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'worker',
              image: 'concordance-worker:0.1.0',
              ports: [{ name: 'health', containerPort: 9464 }],
              readinessProbe: { httpGet: { path: '/readyz', port: 'health' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
    },
  };
}

function service(targetPort: string | number = 'health'): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'cw-worker-metrics' },
    spec: { selector: labels, ports: [{ name: 'health', port: 9464, targetPort }] },
  };
}

const messages = (problems: { message: string }[]) => problems.map((p) => p.message);

describe('validateManifest', () => {
  it('accepts a valid Deployment and Service', () => {
    expect(validateManifest(deployment())).toEqual([]);
    expect(validateManifest(service())).toEqual([]);
  });

  it('reports wrong types from the bundled OpenAPI schema, by path', () => {
    const bad = deployment() as Manifest & { spec: Record<string, unknown> };
    bad.spec.replicas = 'two';
    expect(messages(validateManifest(bad))).toEqual(['/spec/replicas: must be integer']);
  });

  it('refuses removed APIs, naming the release that removed them, and unknown kinds', () => {
    const pdb = {
      apiVersion: 'policy/v1beta1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'cw' },
      spec: { maxUnavailable: 1, selector: { matchLabels: labels } },
    };
    expect(messages(validateManifest(pdb))).toEqual([
      'policy/v1beta1 was removed in Kubernetes 1.25',
    ]);
    expect(
      messages(
        validateManifest({
          apiVersion: 'autoscaling/v2beta2',
          kind: 'HorizontalPodAutoscaler',
          metadata: { name: 'x' },
        }),
      ),
    ).toEqual(['autoscaling/v2beta2 was removed in Kubernetes 1.26']);
    expect(
      messages(
        validateManifest({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'x' } }),
      ),
    ).toEqual(['example.com/v1/Widget is not an allowed (current) apiVersion/kind']);
  });

  it('requires apiVersion, kind and a DNS name', () => {
    expect(messages(validateManifest({ kind: 'Service', metadata: { name: 'Bad_Name' } }))).toEqual(
      [
        'apiVersion: Invalid input: expected string, received undefined',
        'metadata.name: a DNS subdomain name',
      ],
    );
  });

  it('holds every container to the restricted Pod Security Standard', () => {
    const bad = deployment() as Manifest & {
      spec: { template: { spec: { containers: Record<string, unknown>[] } } };
    };
    const container = bad.spec.template.spec.containers[0] as Record<string, unknown>;
    container.securityContext = {
      allowPrivilegeEscalation: true,
      capabilities: { drop: ['NET_RAW'] },
    };
    container.readinessProbe = { httpGet: { path: '/readyz', port: 'metrics' } };
    expect(messages(validateManifest(bad))).toEqual([
      'container worker: allowPrivilegeEscalation must be false',
      'container worker: readOnlyRootFilesystem must be true',
      'container worker: capabilities must drop ALL',
      'container worker: readinessProbe port metrics is not a container port',
    ]);
  });

  it('checks the required fields of ServiceMonitor, PrometheusRule and ScaledObject', () => {
    const monitor = {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: 'cw' },
      spec: {
        selector: { matchLabels: labels },
        endpoints: [{ path: '/metrics', interval: '30s' }],
      },
    };
    expect(messages(validateManifest(monitor))).toEqual(['spec.endpoints.0: port or targetPort']);

    const rule = (duration: string) => ({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name: 'cw' },
      spec: { groups: [{ name: 'g', rules: [{ alert: 'A', for: duration, expr: 'up == 0' }] }] },
    });
    expect(messages(validateManifest(rule('5 minutes')))).toEqual([
      'spec.groups.0.rules.0.for: a Prometheus duration (30s, 5m)',
    ]);
    expect(validateManifest(rule('5m'))).toEqual([]);

    const scaled = (metadata: Record<string, unknown>) => ({
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      metadata: { name: 'cw' },
      spec: { scaleTargetRef: { name: 'cw-worker' }, triggers: [{ type: 'redis', metadata }] },
    });
    expect(messages(validateManifest(scaled({ address: 'redis:6379', listLength: '5' })))).toEqual([
      'spec.triggers.0.metadata: redis trigger needs listName',
    ]);
    const listName = '{cw}:q:wait';
    expect(validateManifest(scaled({ address: 'r:6379', listName, listLength: '5' }))).toEqual([]);
    expect(
      messages(validateManifest(scaled({ address: 'r:6379', listName, listLength: 5 }))),
    ).toEqual([
      'spec.triggers.0.metadata.listLength: Invalid input: expected string, received number',
    ]);
  });
});

describe('crossProblems', () => {
  it('finds Services whose targetPort the pods lack, and selectors that select nothing', () => {
    expect(crossProblems([deployment(), service()])).toEqual([]);
    expect(messages(crossProblems([deployment(), service('http')]))).toEqual([
      'targetPort http is not a port of its pods',
    ]);
    const stray = service();
    (stray as unknown as { spec: { selector: Record<string, string> } }).spec.selector = {
      app: 'other',
    };
    expect(messages(crossProblems([deployment(), stray]))).toEqual([
      'selects no pods of the chart',
    ]);
  });

  it('checks scale targets, ConfigMap volumes (unless external) and duplicates', () => {
    const hpa: Manifest = {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'cw' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'cw-ingest' } },
    };
    const withConfig = deployment() as Manifest & {
      spec: { template: { spec: { volumes: Record<string, unknown>[] } } };
    };
    withConfig.spec.template.spec.volumes.push({ name: 'ca', configMap: { name: 'ca-bundle' } });
    expect(messages(crossProblems([withConfig, hpa, service(), service()]))).toEqual([
      'ConfigMap ca-bundle is not rendered',
      'scaleTargetRef cw-ingest is not a Deployment of the set',
      'rendered twice',
    ]);
    expect(crossProblems([withConfig], new Set(['ConfigMap/ca-bundle']))).toEqual([]);
  });

  it('checks that an Ingress routes to a Service of the set, on one of its ports', () => {
    const ingress = (name: string, port: { name?: string; number?: number }): Manifest => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'cw' },
      spec: {
        rules: [
          {
            host: 'cw.hospital.example',
            http: {
              paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port } } }],
            },
          },
        ],
      },
    });
    expect(validateManifest(ingress('cw-worker-metrics', { name: 'health' }))).toEqual([]);
    expect(
      crossProblems([deployment(), service(), ingress('cw-worker-metrics', { name: 'health' })]),
    ).toEqual([]);
    expect(
      crossProblems([deployment(), service(), ingress('cw-worker-metrics', { number: 9464 })]),
    ).toEqual([]);
    expect(
      messages(
        crossProblems([
          deployment(),
          service(),
          ingress('cw-worker-metrics', { name: 'http' }),
          ingress('cw-ingest', { name: 'http' }),
        ]),
      ),
    ).toEqual([
      'backend port http is not a port of Service cw-worker-metrics',
      'backend Service cw-ingest is not rendered',
      'rendered twice',
    ]);
  });
});

describe('parseManifests, validateManifests and ruleFiles', () => {
  it('reads a multi-document stream, skipping empty documents, and extracts rule groups', () => {
    const text = [
      '---',
      '# Source: empty',
      '---',
      'apiVersion: monitoring.coreos.com/v1',
      'kind: PrometheusRule',
      'metadata: { name: cw }',
      'spec:',
      '  groups:',
      '    - name: g',
      '      rules: [{ alert: A, expr: "up == 0", for: 1m, labels: { severity: warning } }]',
    ].join('\n');
    const docs = parseManifests(text);
    expect(docs).toHaveLength(1);
    expect(validateManifests(docs)).toEqual({
      problems: [],
      kinds: ['monitoring.coreos.com/v1/PrometheusRule'],
    });
    expect([...ruleFiles(docs)]).toEqual([
      [
        'cw.rules.yaml',
        'groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n        for: 1m\n        labels:\n          severity: warning\n',
      ],
    ]);
  });

  it('throws on YAML that does not parse', () => {
    expect(() => parseManifests('a: [1, 2')).toThrow(/^YAML: /);
  });
});
