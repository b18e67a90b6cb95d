/**
 * deploy/chart on the real control plane: `helm install` (no --wait: nuo's image need not exist for the
 * API server to accept the objects) creates every object the chart renders, as rendered; the CRD is
 * Established and the default UpdatePolicy exists; the workloads' controllers make their pods; an
 * upgrade changes the agent's set-up, another adds a ServiceMonitor and a PrometheusRule that
 * prometheus-operator's own CRDs accept; an uninstall removes what the templates made and, as Helm does
 * with crds/, keeps the CRD.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import type { V1DaemonSet } from '@kubernetes/client-node';
import { pollUntil } from '../../src/util/poll.ts';
import { CHART_DIR } from '../../tools/helm/run.ts';
import { prometheusOperatorCrds } from '../../tools/prometheus-operator/crds.ts';
import { useHelm } from './helm.ts';
import { type KubeObject, objectKey, parseManifests, valueDifferences } from './manifests.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 2 });
const helm = await useHelm();
const NS = 'nuo-system';
const kubeconfig = `--kubeconfig=${cluster.kubeconfigPath}`;
const kubectl = (args: string[], input?: string) =>
  spawnSync(cluster.binaries.path.kubectl, [kubeconfig, ...args], { encoding: 'utf8', input });

/** The objects as the API server stores them, read back by what the manifests name. */
function readBack(objects: KubeObject[]): Map<string, KubeObject> {
  const r = kubectl(['get', '-f', '-', '-o', 'json'], objects.map((o) => JSON.stringify(o)).join('\n'));
  assert.equal(r.status, 0, `kubectl get: ${r.stderr}`);
  const got = JSON.parse(r.stdout) as { items?: KubeObject[] } & KubeObject;
  return new Map((got.items ?? [got]).map((o) => [objectKey(o), o]));
}

function releaseObjects(): KubeObject[] {
  const r = helm('get', 'manifest', 'nuo', '-n', NS, kubeconfig);
  assert.equal(r.status, 0, r.stderr);
  return parseManifests(r.stdout);
}

const crd = () => {
  const r = helm('show', 'crds', CHART_DIR);
  assert.equal(r.status, 0, r.stderr);
  return parseManifests(r.stdout);
};

describe('helm install deploy/chart', () => {
  test('the API server accepts and stores every object the chart renders, as rendered', () => {
    const r = helm('install', 'nuo', CHART_DIR, '-n', NS, '--create-namespace', kubeconfig);
    assert.equal(r.status, 0, `helm install: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /STATUS: deployed/);
    assert.match(
      r.stdout,
      /The UpdatePolicy "default" selects every node/,
      'the notes say what will be updated',
    );
    const rendered = [...crd(), ...releaseObjects()];
    assert.ok(rendered.length >= 13, `the release holds ${rendered.map(objectKey).join(', ')}`);
    const stored = readBack(rendered);
    for (const o of rendered) {
      const got = stored.get(objectKey(o));
      assert.ok(got, `${objectKey(o)} stored`);
      // Every rendered field there, unchanged: nothing dropped as unknown or rewritten by admission.
      assert.deepEqual(valueDifferences(o, got, true), [], objectKey(o));
    }
    for (const o of releaseObjects()) {
      const got = stored.get(objectKey(o));
      assert.equal(
        got?.metadata.labels?.['app.kubernetes.io/managed-by'],
        'Helm',
        `${objectKey(o)} marked as Helm's`,
      );
      assert.equal(got?.metadata.annotations?.['meta.helm.sh/release-name'], 'nuo', objectKey(o));
    }
  });

  test("the CRD is Established and the default UpdatePolicy exists with the chart's spec", () => {
    const established = kubectl([
      'get',
      'crd',
      'updatepolicies.nuo.dev',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Established")].status}',
    ]);
    assert.equal(established.stdout, 'True', established.stderr);
    const policy = kubectl(['get', 'updatepolicy', 'default', '-o', 'json']);
    assert.equal(policy.status, 0, policy.stderr);
    const spec = (JSON.parse(policy.stdout) as { spec: Record<string, unknown> }).spec;
    assert.equal(spec.maxUnavailable, 1);
    assert.equal(spec.zoneLabel, 'topology.kubernetes.io/zone', "the CRD's defaults applied");
  });

  test("the workloads' controllers make their pods: two operator replicas, an agent on each node", async () => {
    await pollUntil(
      'the operator and agent pods',
      () => {
        const r = kubectl(['get', 'pods', '-n', NS, '-o', 'json']);
        const pods = (JSON.parse(r.stdout) as { items: { metadata: { labels: Record<string, string> } }[] })
          .items;
        const count = (component: string) =>
          pods.filter((p) => p.metadata.labels['app.kubernetes.io/component'] === component).length;
        return count('operator') === 2 && count('agent') === 2 ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });

  test('helm upgrade to another agent variant changes the DaemonSet', () => {
    const r = helm(
      'upgrade',
      'nuo',
      CHART_DIR,
      '-n',
      NS,
      '--reuse-values',
      '--set',
      'agent.variant=flatcar',
      kubeconfig,
    );
    assert.equal(r.status, 0, `helm upgrade: ${r.stdout}${r.stderr}`);
    const ds = kubectl(['get', 'daemonset', 'nuo-agent', '-n', NS, '-o', 'json']);
    const spec = (JSON.parse(ds.stdout) as V1DaemonSet).spec?.template.spec;
    assert.deepEqual(spec?.containers[0]?.args, ['agent', '--detector=update-engine', '--rebooter=logind']);
    assert.deepEqual(
      spec?.volumes?.map((v) => v.name),
      ['os-release', 'system-bus'],
    );
  });

  test("with prometheus-operator's CRDs, the ServiceMonitor and PrometheusRule are accepted as rendered", async () => {
    for (const file of await prometheusOperatorCrds()) {
      const r = kubectl(['apply', '--server-side', '-f', file]);
      assert.equal(r.status, 0, `${file}: ${r.stderr}`);
    }
    const established = kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/servicemonitors.monitoring.coreos.com',
      'crd/prometheusrules.monitoring.coreos.com',
    ]);
    assert.equal(established.status, 0, established.stderr);
    const r = helm(
      'upgrade',
      'nuo',
      CHART_DIR,
      '-n',
      NS,
      '--reuse-values',
      '--set',
      'metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true',
      kubeconfig,
    );
    assert.equal(r.status, 0, `helm upgrade: ${r.stdout}${r.stderr}`);
    const monitoring = releaseObjects().filter((o) => o.apiVersion.startsWith('monitoring.coreos.com/'));
    assert.deepEqual(monitoring.map(objectKey).sort(), [
      `PrometheusRule ${NS}/nuo`,
      `ServiceMonitor ${NS}/nuo-operator`,
    ]);
    const stored = readBack(monitoring);
    for (const o of monitoring) {
      assert.deepEqual(valueDifferences(o, stored.get(objectKey(o)), true), [], objectKey(o));
    }
  });

  test('helm uninstall removes what the templates made and keeps the CRD', async () => {
    const made = releaseObjects();
    const r = helm('uninstall', 'nuo', '-n', NS, kubeconfig);
    assert.equal(r.status, 0, `helm uninstall: ${r.stdout}${r.stderr}`);
    await pollUntil(
      'every templated object gone',
      () => {
        const left = kubectl(
          ['get', '-f', '-', '--ignore-not-found', '-o', 'name'],
          made.map((o) => JSON.stringify(o)).join('\n'),
        );
        return left.status === 0 && left.stdout.trim() === '' ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const kept = kubectl(['get', 'crd', 'updatepolicies.nuo.dev', '-o', 'name']);
    assert.equal(kept.stdout.trim(), 'customresourcedefinition.apiextensions.k8s.io/updatepolicies.nuo.dev');
  });
});
