/**
 * deploy/chart against deploy/ (kustomize): rendered with default values (`helm template`) the chart
 * makes the objects `kubectl kustomize deploy` makes, and with agent.variant=X those of
 * deploy/variants/X, compared object by object (kind, namespace, name) and field by field.
 *
 * What differs by design, and nothing else:
 * - kustomize's Namespace nuo-system: the chart installs into the release's namespace, which
 *   `helm install -n nuo-system --create-namespace` creates (a Namespace template would make Helm refuse
 *   the install: the namespace exists and is not the release's).
 * - the chart's UpdatePolicy "default" (defaultPolicy.enabled): with kustomize it is a separate step,
 *   deploy/policies/default.yaml, applied once the CRD is established; Helm installs crds/ first.
 * Helm itself adds nothing to rendered objects: its ownership marks (the label app.kubernetes.io/managed-by
 * and the meta.helm.sh/release-* annotations) are written at install, so no label is normalised here
 * (test/integration/chart-install.test.ts reads them back).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type {
  V1Container,
  V1DaemonSet,
  V1Deployment,
  V1PodSpec,
  V1Service,
  V1ValidatingAdmissionPolicy,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import type { UpdatePolicy } from '../../src/api/update-policy.ts';
import { OperatorMetrics } from '../../src/operator/metrics.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { ensureClusterBinaries } from '../../tools/cluster/build.ts';
import { CHART_DIR } from '../../tools/helm/run.ts';
import { useHelm } from './helm.ts';
import { type KubeObject, manifestDifferences, objectKey, parseManifests } from './manifests.ts';

const helm = await useHelm();
const { path: bins } = await ensureClusterBinaries();
const deployDir = fileURLToPath(new URL('../../deploy', import.meta.url));
const { version } = JSON.parse(readFileSync(join(deployDir, '..', 'package.json'), 'utf8')) as {
  version: string;
};

/** `helm template` of the chart with these values (merged over values.yaml), CRDs included. */
function render(values: object = {}, namespace = 'nuo-system'): ReturnType<typeof helm> {
  return spawnHelmWithValues(['template', 'nuo', CHART_DIR, '-n', namespace, '--include-crds'], values);
}

const scratch = mkdtempSync(join(tmpdir(), 'nuo-chart-render-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let valuesFiles = 0;
function spawnHelmWithValues(args: string[], values: object): ReturnType<typeof helm> {
  const file = join(scratch, `values-${valuesFiles++}.json`);
  writeFileSync(file, JSON.stringify(values));
  return helm(...args, '-f', file);
}

function objects(values: object = {}, namespace = 'nuo-system'): KubeObject[] {
  const r = render(values, namespace);
  assert.equal(r.status, 0, `helm template ${JSON.stringify(values)}: ${r.stderr}`);
  return parseManifests(r.stdout);
}

function kustomize(dir: string): KubeObject[] {
  const r = spawnSync(bins.kubectl, ['kustomize', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, `kubectl kustomize ${dir}: ${r.stderr}`);
  return parseManifests(r.stdout);
}

/** What the chart installs where kustomize's objects are: its Namespace left out, the default policy added. */
function kustomizeInstall(dir: string): KubeObject[] {
  const defaultPolicy = parseManifests(readFileSync(join(deployDir, 'policies', 'default.yaml'), 'utf8'));
  return [...kustomize(dir).filter((o) => o.kind !== 'Namespace'), ...defaultPolicy];
}

/** The rendered object of this kind and name, typed as the caller reads it. */
function find<T = KubeObject>(all: KubeObject[], kind: string, name: string): T & KubeObject {
  const o = all.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `${kind} ${name} rendered (have: ${all.map(objectKey).join(', ')})`);
  return o as T & KubeObject;
}

function podSpec(all: KubeObject[], kind: 'Deployment' | 'DaemonSet', name: string): V1PodSpec {
  const spec = find<V1Deployment | V1DaemonSet>(all, kind, name).spec?.template.spec;
  assert.ok(spec, `${kind} ${name} has a pod spec`);
  return spec;
}

const container = (all: KubeObject[], kind: 'Deployment' | 'DaemonSet', name: string): V1Container => {
  const c = podSpec(all, kind, name).containers[0];
  assert.ok(c, `${kind} ${name} has a container`);
  return c;
};

interface ServiceMonitor {
  spec: {
    selector: { matchLabels: Record<string, string> };
    namespaceSelector: unknown;
    endpoints: unknown[];
  };
}

interface PrometheusRule {
  spec: {
    groups: {
      name: string;
      rules: { alert: string; expr: string; for?: string; labels: Record<string, string> }[];
    }[];
  };
}

describe('deploy/chart is deploy/ (kustomize)', () => {
  test("Chart.yaml's version and appVersion are package.json's", () => {
    const chart = parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as Record<string, string>;
    assert.equal(chart.version, version);
    assert.equal(chart.appVersion, version);
  });

  test('default values render the objects of `kubectl kustomize deploy`', () => {
    const chart = objects();
    assert.deepEqual(manifestDifferences(kustomizeInstall(deployDir), chart), []);
    // The comparison holds only if the kustomize side is what it should be: every kind nuo installs.
    assert.deepEqual([...new Set(chart.map((o) => o.kind))].sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'CustomResourceDefinition',
      'DaemonSet',
      'Deployment',
      'PodDisruptionBudget',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
      'UpdatePolicy',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    const image = container(chart, 'Deployment', 'nuo-operator').image;
    assert.equal(image, `ghcr.io/nuo-dev/nuo:${version}`, "the image at the chart's appVersion");
  });

  for (const variant of ['flatcar', 'cos', 'command']) {
    test(`agent.variant=${variant} renders the objects of deploy/variants/${variant}`, () => {
      const chart = objects({ agent: { variant } });
      assert.deepEqual(
        manifestDifferences(kustomizeInstall(join(deployDir, 'variants', variant)), chart),
        [],
      );
    });
  }

  /** deploy with one of its components, as kustomize builds it. */
  const withComponent = (component: string) => {
    // kustomize takes relative paths only: the overlay lives in the checkout's .tmp (git-ignored).
    mkdirSync(join(deployDir, '..', '.tmp'), { recursive: true });
    const overlay = mkdtempSync(join(deployDir, '..', '.tmp', `${component}-overlay-`));
    try {
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          `resources: [${relative(overlay, deployDir)}]`,
          `components: [${relative(overlay, join(deployDir, 'components', component))}]`,
        ].join('\n'),
      );
      return kustomizeInstall(overlay);
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  };

  test('fleetlock.enabled renders the objects of deploy with the component deploy/components/fleetlock', () => {
    const chart = objects({ fleetlock: { enabled: true } });
    assert.deepEqual(manifestDifferences(withComponent('fleetlock'), chart), []);
    const service = chart.find((o) => o.kind === 'Service' && o.metadata?.name === 'nuo-fleetlock');
    assert.ok(service, 'the Service nuo-fleetlock');
    assert.ok(container(chart, 'Deployment', 'nuo-operator').args?.includes('--fleetlock-port=9090'));
    assert.equal(
      objects().find((o) => o.metadata?.name === 'nuo-fleetlock'),
      undefined,
      'off by default',
    );
    // For Zincati on hosts without cluster DNS: a NodePort at a port every node answers.
    const nodePort = objects({
      fleetlock: { enabled: true, service: { type: 'NodePort', nodePort: 30909 } },
    }).find((o) => o.kind === 'Service' && o.metadata?.name === 'nuo-fleetlock') as
      | { spec?: { type?: string; ports?: Array<{ nodePort?: number }> } }
      | undefined;
    assert.equal(nodePort?.spec?.type, 'NodePort');
    assert.equal(nodePort?.spec?.ports?.[0]?.nodePort, 30909);
    const refused = render({ fleetlock: { enabled: true, service: { nodePort: 80 } } });
    assert.notEqual(refused.status, 0, 'a nodePort outside 30000-32767 is refused by the schema');
    assert.match(refused.stderr, /nodePort/);
  });

  test('sucPlans.namespace renders the objects of deploy with the component deploy/components/suc-plans', () => {
    const chart = objects({ sucPlans: { namespace: 'system-upgrade' } });
    assert.deepEqual(manifestDifferences(withComponent('suc-plans'), chart), []);
    const role = chart.find((o) => o.kind === 'Role' && o.metadata?.name === 'nuo-suc-plans');
    assert.equal(role?.metadata?.namespace, 'system-upgrade', "the Role in SUC's namespace");
    assert.ok(
      container(chart, 'Deployment', 'nuo-operator').args?.includes('--suc-plans-namespace=system-upgrade'),
    );
    assert.equal(
      objects().find((o) => o.metadata?.name === 'nuo-suc-plans'),
      undefined,
      'off by default',
    );
  });

  test('an unknown agent variant is refused, naming the variants there are', () => {
    const r = render({ agent: { variant: 'ubuntu' } });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /agent[./]variant/);
    assert.match(r.stderr, /sentinel.*flatcar.*cos.*command/);
  });

  test('a misspelt value is refused, not ignored', () => {
    const r = render({ agent: { varient: 'flatcar' } });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /varient/);
  });
});

describe('deploy/chart values', () => {
  test("every object and reference follows the release's namespace", () => {
    const r = render({}, 'platform-nuo');
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /nuo-system/);
    const all = parseManifests(r.stdout);
    for (const o of all) {
      const clusterScoped = /^(Cluster|CustomResourceDefinition|UpdatePolicy|ValidatingAdmission)/.test(
        o.kind,
      );
      assert.equal(o.metadata.namespace, clusterScoped ? undefined : 'platform-nuo', objectKey(o));
    }
    const vap = find<V1ValidatingAdmissionPolicy>(
      all,
      'ValidatingAdmissionPolicy',
      'nuo-agent-own-node-keys',
    );
    assert.match(
      vap.spec?.matchConditions?.[0]?.expression ?? '',
      /'system:serviceaccount:platform-nuo:nuo-agent'/,
    );
    assert.deepEqual(
      container(all, 'Deployment', 'nuo-operator').env?.find((e) => e.name === 'NUO_NAMESPACE'),
      { name: 'NUO_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      "the operator's Lease and ledger in its own namespace",
    );
  });

  test("the operator's PodDisruptionBudget: with more than one replica, unless turned off", () => {
    const pdb = (values: object) => objects(values).filter((o) => o.kind === 'PodDisruptionBudget');
    const [rendered] = pdb({});
    assert.deepEqual((rendered as KubeObject & { spec?: unknown })?.spec, {
      minAvailable: 1,
      selector: {
        matchLabels: { 'app.kubernetes.io/name': 'nuo', 'app.kubernetes.io/component': 'operator' },
      },
    });
    assert.equal(pdb({ operator: { replicas: 3 } }).length, 1);
    assert.deepEqual(
      pdb({ operator: { replicas: 1 } }),
      [],
      'one replica: a PDB would refuse its every eviction',
    );
    assert.deepEqual(pdb({ operator: { podDisruptionBudget: { enabled: false } } }), []);
  });

  test('image, replicas, resources, placement, pull secrets and extra flags reach both workloads', () => {
    const operatorResources = { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } };
    const agentResources = { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '128Mi' } };
    const tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'ops', effect: 'NoSchedule' }];
    const affinity = {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } },
    };
    const all = objects({
      image: { repository: 'registry.example/nuo', tag: '9.9.9', pullPolicy: 'Always' },
      imagePullSecrets: [{ name: 'pull' }],
      operator: {
        replicas: 3,
        resources: operatorResources,
        nodeSelector: { role: 'ops' },
        tolerations,
        affinity,
        nodeOptions: '--max-old-space-size=200',
        extraArgs: ['--blocker-interval=30s'],
      },
      agent: {
        resources: agentResources,
        nodeSelector: { os: 'linux' },
        tolerations,
        affinity,
        extraArgs: ['--check-interval=5m'],
      },
    });
    assert.equal(find<V1Deployment>(all, 'Deployment', 'nuo-operator').spec?.replicas, 3);
    for (const [kind, name, role] of [
      ['Deployment', 'nuo-operator', 'ops'],
      ['DaemonSet', 'nuo-agent', 'linux'],
    ] as const) {
      const spec = podSpec(all, kind, name);
      const c = container(all, kind, name);
      assert.equal(c.image, 'registry.example/nuo:9.9.9', name);
      assert.equal(c.imagePullPolicy, 'Always', name);
      assert.deepEqual(spec.imagePullSecrets, [{ name: 'pull' }], name);
      assert.deepEqual(spec.tolerations, tolerations, name);
      assert.deepEqual(spec.affinity?.nodeAffinity, affinity.nodeAffinity, name);
      assert.deepEqual(Object.values(spec.nodeSelector ?? {}), [role], name);
    }
    // Helm merges maps with the defaults: the operator keeps its anti-affinity unless set to null.
    assert.ok(podSpec(all, 'Deployment', 'nuo-operator').affinity?.podAntiAffinity, 'anti-affinity kept');
    const op = container(all, 'Deployment', 'nuo-operator');
    assert.deepEqual(op.resources, operatorResources);
    assert.deepEqual(op.args, ['operator', '--blocker-interval=30s']);
    assert.equal(op.env?.find((e) => e.name === 'NODE_OPTIONS')?.value, '--max-old-space-size=200');
    const agent = container(all, 'DaemonSet', 'nuo-agent');
    assert.deepEqual(agent.resources, agentResources);
    assert.deepEqual(agent.args, [
      'agent',
      '--detector=sentinel-file',
      '--rebooter=logind',
      '--check-interval=5m',
    ]);
  });

  test("the command variant's check command is a value", () => {
    const all = objects({
      agent: { variant: 'command', checkCommand: '/usr/local/bin/needs-reboot --quiet' },
    });
    const args = container(all, 'DaemonSet', 'nuo-agent').args ?? [];
    assert.ok(args.includes('--check-command=/usr/local/bin/needs-reboot --quiet'), JSON.stringify(args));
  });

  test('metrics.port moves the container port and the flag; probes and the Service follow by name', () => {
    const all = objects({ metrics: { port: 9100 } });
    const c = container(all, 'Deployment', 'nuo-operator');
    assert.deepEqual(c.ports, [{ name: 'metrics', containerPort: 9100 }]);
    assert.deepEqual(c.args, ['operator', '--metrics-port=9100']);
    assert.equal(c.readinessProbe?.httpGet?.port, 'metrics');
    const svc = find<V1Service>(all, 'Service', 'nuo-operator-metrics');
    assert.deepEqual(svc.spec?.ports, [{ name: 'metrics', port: 9100, targetPort: 'metrics' }]);
    const none = objects({ metrics: { service: { enabled: false } } });
    assert.equal(none.filter((o) => o.kind === 'Service').length, 0, 'metrics.service.enabled=false');
  });

  test("the default policy's spec is a value, and the policy can be left out", () => {
    const spec = { maxUnavailable: '20%', maxUnavailablePerZone: 1, drain: { timeout: '30m' } };
    const policy = find(
      objects({ defaultPolicy: { spec } }),
      'UpdatePolicy',
      'default',
    ) as unknown as UpdatePolicy;
    assert.deepEqual(policy.spec, spec);
    const resolved = resolvePolicy(policy);
    assert.ok(resolved.ok, JSON.stringify(!resolved.ok && resolved.errors));
    const without = objects({ defaultPolicy: { enabled: false } });
    assert.equal(without.filter((o) => o.kind === 'UpdatePolicy').length, 0);
    assert.ok(
      without.some((o) => o.kind === 'CustomResourceDefinition'),
      'the CRD stays',
    );
  });
});

describe('deploy/chart monitoring', () => {
  const monitored = () =>
    objects({
      metrics: {
        serviceMonitor: { enabled: true, interval: '15s', labels: { release: 'prom' } },
        prometheusRule: {
          enabled: true,
          labels: { release: 'prom' },
          rolloutStuckAfter: '2h',
          alertLabels: { team: 'platform' },
        },
      },
    });

  test('the ServiceMonitor scrapes the metrics Service: its labels, namespace and port name', () => {
    const all = monitored();
    const sm = find<ServiceMonitor>(all, 'ServiceMonitor', 'nuo-operator');
    const svc = find<V1Service>(all, 'Service', 'nuo-operator-metrics');
    assert.equal(sm.metadata.labels?.release, 'prom');
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels))
      assert.equal(svc.metadata.labels?.[k], v, k);
    assert.deepEqual(sm.spec.namespaceSelector, { matchNames: [svc.metadata.namespace] });
    assert.deepEqual(sm.spec.endpoints, [
      { port: svc.spec?.ports?.[0]?.name, path: '/metrics', interval: '15s' },
    ]);
    const r = render({ metrics: { service: { enabled: false }, serviceMonitor: { enabled: true } } });
    assert.notEqual(r.status, 0, 'a ServiceMonitor without its Service');
    assert.match(r.stderr, /metrics\.serviceMonitor\.enabled needs metrics\.service\.enabled/);
  });

  test("the PrometheusRule's alerts use only metrics the operator exports, and promtool accepts them", () => {
    const rule = find<PrometheusRule>(monitored(), 'PrometheusRule', 'nuo');
    assert.equal(rule.metadata.labels?.release, 'prom');
    const rules = rule.spec.groups.flatMap((g) => g.rules);
    assert.deepEqual(
      rules.map((r) => r.alert),
      ['NuoRolloutStuck', 'NuoNodeFailed', 'NuoNoLeader', 'NuoDrainBlocked'],
    );
    const exported = new Set(
      new OperatorMetrics({ version: '0.0.0', revision: 'test', node: process.versions.node }).registry
        .getMetricsAsArray()
        .map((m) => m.name),
    );
    for (const r of rules) {
      assert.equal(r.labels.team, 'platform', `${r.alert}: alertLabels`);
      assert.match(r.labels.severity ?? '', /^(warning|critical)$/, r.alert);
      for (const name of r.expr.match(/\bnuo_\w+/g) ?? []) {
        const metric = exported.has(name) ? name : name.replace(/_(count|sum|bucket)$/, '');
        assert.ok(exported.has(metric), `${r.alert}: ${name} is not a metric of src/operator/metrics.ts`);
      }
    }
    const stuck = rules.find((r) => r.alert === 'NuoRolloutStuck');
    assert.match(stuck?.expr ?? '', /\[2h\]/);
    assert.equal(stuck?.for, '2h');
    const file = join(scratch, 'rules.json');
    writeFileSync(file, JSON.stringify({ groups: rule.spec.groups }));
    // Debian's prometheus package ships promtool beside the server (.ci/run installs it).
    const check = spawnSync('/usr/bin/promtool', ['check', 'rules', file], { encoding: 'utf8' });
    assert.ifError(check.error);
    assert.equal(check.status, 0, `promtool check rules: ${check.stdout}${check.stderr}`);
    assert.match(check.stdout, /SUCCESS: 4 rules found/);
  });
});

describe('helm lint', () => {
  const cases: [string, object][] = [
    ['default values', {}],
    ...['flatcar', 'cos', 'command'].map((variant): [string, object] => [
      `agent.variant=${variant}`,
      { agent: { variant } },
    ]),
    [
      'ServiceMonitor and PrometheusRule on, default policy off',
      {
        metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } },
        defaultPolicy: { enabled: false },
      },
    ],
  ];
  for (const [what, values] of cases) {
    test(`passes with --strict: ${what}`, () => {
      const r = spawnHelmWithValues(['lint', '--strict', CHART_DIR], values);
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });
  }
});
