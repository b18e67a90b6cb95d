/**
 * deploy/ on the real control plane: the manifests apply; the agent's admission policy confines a
 * pod-bound agent token to its own Node's nuo.dev/ keys; the operator works with exactly the RBAC that
 * deploy/ grants it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { openSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import {
  GRANT_KEY_NAME,
  GrantCheck,
  PUBLIC_KEY_FIELD,
  publicKeyFromPem,
  verifyGrant,
} from '../../src/api/grant.ts';
import {
  AGENT_ANNOTATIONS,
  AGENT_LABELS,
  Annotations,
  Labels,
  LifecycleConditions,
} from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicy } from '../../src/api/update-policy.ts';
import { LeanApiError, LeanClient } from '../../src/kube/lean-client.ts';
import { mergePatch, strategicMergePatch } from '../../src/kube/patch.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { KWOK_CUSTOM_STATUS } from '../../src/sim/cluster/cluster.ts';
import { OPERATOR_NODE_OPTIONS } from '../../src/sim/fleet.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { statusOf, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const deployDir = fileURLToPath(new URL('../../deploy', import.meta.url));
const kubectl = (...args: string[]) =>
  spawnSync(cluster.binaries.path.kubectl, [`--kubeconfig=${cluster.kubeconfigPath}`, ...args], {
    encoding: 'utf8',
  });

async function rejection(call: Promise<unknown>): Promise<LeanApiError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof LeanApiError) return err;
    throw err;
  }
  throw new Error('expected the request to be refused, but it succeeded');
}

/** The pod-bound token of node-0's agent, made by the admission-policy test. */
let agentToken = '';

describe('deploy/', () => {
  test('applies cleanly with kubectl apply -k', () => {
    const r = kubectl('apply', '-k', deployDir);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /daemonset.apps\/nuo-agent created/);
    assert.match(
      r.stdout,
      /validatingadmissionpolicy.admissionregistration.k8s.io\/nuo-agent-own-node-keys created/,
    );
  });

  test('the operator runs with the V8 flags the simulated fleet gives it', () => {
    const r = kubectl('kustomize', deployDir);
    assert.equal(r.status, 0, r.stderr);
    const operator = r.stdout.split(/^---$/m).find((doc) => /^kind: Deployment$/m.test(doc)) ?? '';
    const value = operator.match(/- name: NODE_OPTIONS\n\s+value: (.+)/)?.[1];
    assert.equal(value, OPERATOR_NODE_OPTIONS, 'deploy/base/operator.yaml NODE_OPTIONS vs src/sim/fleet.ts');
  });

  test('every agent variant renders and is accepted by the API server, asking only for what it needs', () => {
    const expectations: Record<string, { detector: string; hostPID: boolean }> = {
      flatcar: { detector: 'update-engine', hostPID: false },
      cos: { detector: 'cos-update-engine', hostPID: false },
      command: { detector: 'command', hostPID: true },
    };
    for (const [variant, want] of Object.entries(expectations)) {
      const dir = join(deployDir, 'variants', variant);
      const rendered = kubectl('kustomize', dir);
      assert.equal(rendered.status, 0, rendered.stderr);
      const ds = rendered.stdout.split(/^---$/m).find((doc) => /^kind: DaemonSet$/m.test(doc)) ?? '';
      assert.match(ds, new RegExp(`- --detector=${want.detector}$`, 'm'), variant);
      assert.equal(/hostPID: true/.test(ds), want.hostPID, `${variant}: hostPID only where nsenter needs it`);
      assert.equal(
        /privileged: true/.test(ds),
        want.hostPID,
        `${variant}: privileged only where nsenter needs it`,
      );
      assert.doesNotMatch(ds, /path: \/$/m, `${variant}: never the whole host root`);
      const applied = kubectl('apply', '--dry-run=server', '-k', dir);
      assert.equal(applied.status, 0, `${variant}: ${applied.stderr}`);
    }
  });

  test("an agent's pod-bound token may change only its own Node, and there only the agent's keys, key by key", async () => {
    const pod = await pollUntil('an agent pod on node-0', async () => {
      const pods = await core.listNamespacedPod({
        namespace: 'nuo-system',
        fieldSelector: 'spec.nodeName=node-0',
        labelSelector: 'app.kubernetes.io/component=agent',
      });
      return pods.items[0];
    });
    const review = await core.createNamespacedServiceAccountToken({
      name: 'nuo-agent',
      namespace: 'nuo-system',
      body: {
        spec: {
          audiences: [],
          expirationSeconds: 3600,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid },
        },
      },
    });
    const token = review.status?.token ?? '';
    agentToken = token;
    const client = new LeanClient({ server: cluster.server, ca: cluster.caCert, token: () => token });
    try {
      // A new policy takes effect within seconds: wait until it refuses, then check everything.
      const otherNode = await pollUntil(
        'the policy to refuse another node',
        async () => {
          const err = await rejection(
            client.patchNode('node-1', { metadata: { annotations: { [Annotations.rebootNeeded]: 'true' } } }),
          ).catch(() => undefined);
          return err;
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      assert.match(otherNode.message, /may change only the Node it runs on/);
      const own = await client.patchNode('node-0', {
        metadata: { annotations: { [Annotations.rebootNeeded]: 'true' } },
      });
      assert.equal(own.metadata.annotations?.[Annotations.rebootNeeded], 'true');
      // Key by key: every key of another writer is refused, every key of the agent's is taken.
      const notAgents = [
        ...Object.values(Annotations).filter((k) => !AGENT_ANNOTATIONS.includes(k)),
        'example.com/x',
      ];
      for (const key of notAgents) {
        const refused = await rejection(
          client.patchNode('node-0', { metadata: { annotations: { [key]: 'x' } } }),
        );
        assert.match(refused.message, /may change only its own keys/, key);
        assert.ok(refused.message.endsWith(`not: ${key}`), `${key}: named in "${refused.message}"`);
      }
      for (const key of [
        ...Object.values(Labels).filter((k) => !AGENT_LABELS.includes(k)),
        'example.com/x',
      ]) {
        const refused = await rejection(client.patchNode('node-0', { metadata: { labels: { [key]: 'x' } } }));
        assert.match(refused.message, /may change only its own keys/, `label ${key}`);
      }
      for (const key of AGENT_ANNOTATIONS) {
        const taken = await client.patchNode('node-0', { metadata: { annotations: { [key]: 'x' } } });
        assert.equal(taken.metadata.annotations?.[key], 'x', key);
        await client.patchNode('node-0', { metadata: { annotations: { [key]: null } } });
      }
      const cordon = await rejection(client.patchNode('node-0', { spec: { unschedulable: true } }));
      assert.match(cordon.message, /may not change a Node's spec/);
      const label = await client.patchNode('node-0', {
        metadata: { labels: { 'nuo.dev/os-id': 'flatcar' } },
      });
      assert.equal(label.metadata.labels?.['nuo.dev/os-id'], 'flatcar');
    } finally {
      client.close();
    }
  });

  test('the operator reboots a node under the default policy with only the RBAC deploy/ grants it', async () => {
    const defaultPolicy = join(deployDir, 'policies', 'default.yaml');
    const applied = kubectl('apply', '-f', defaultPolicy);
    assert.equal(applied.status, 0, applied.stderr);
    const token = (
      await core.createNamespacedServiceAccountToken({
        name: 'nuo-operator',
        namespace: 'nuo-system',
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status?.token;
    const kubeconfig = join(cluster.dir, 'operator-sa.kubeconfig');
    const admin = JSON.parse((await import('node:fs')).readFileSync(cluster.kubeconfigPath, 'utf8'));
    admin.users = [{ name: 'nuo-operator', user: { token } }];
    admin.contexts = [{ name: 'op', context: { cluster: 'nuo-local', user: 'nuo-operator' } }];
    admin['current-context'] = 'op';
    await writeFile(kubeconfig, JSON.stringify(admin));
    const log = openSync(join(cluster.dir, 'logs', 'operator-rbac.log'), 'a');
    const operator = spawn(
      process.execPath,
      [
        fileURLToPath(new URL('../../bin/nuo.js', import.meta.url)),
        'operator',
        `--kubeconfig=${kubeconfig}`,
        '--metrics-port=0',
        '--identity=rbac',
      ],
      { stdio: ['ignore', log, log] },
    );
    try {
      // No simulated host here: play the agent's part by hand, as the protocol says. The policy test
      // left needs on node-0 (and on node-1, before the policy took effect): only node-2 needs one now.
      for (const name of ['node-0', 'node-1']) {
        await core.patchNode(
          { name, body: { metadata: { annotations: { [Annotations.rebootNeeded]: null } } } },
          mergePatch,
        );
      }
      // And the kubelet's: a boot ID (KWOK reports none; a grant is for one boot).
      await core.patchNode(
        { name: 'node-2', body: { metadata: { annotations: { [KWOK_CUSTOM_STATUS]: 'custom' } } } },
        mergePatch,
      );
      await core.patchNodeStatus(
        { name: 'node-2', body: { status: { nodeInfo: { bootID: 'boot-of-node-2' } } } },
        strategicMergePatch,
      );
      await core.patchNode(
        { name: 'node-2', body: { metadata: { annotations: { [Annotations.rebootNeeded]: 'true' } } } },
        mergePatch,
      );
      const granted = await pollUntil(
        'the grant',
        async () => {
          const n = await core.readNode({ name: 'node-2' });
          return n.metadata?.annotations?.[Annotations.rebootOk] !== undefined ? n : undefined;
        },
        { timeoutMs: 60_000 },
      );
      assert.equal(granted.spec?.unschedulable, true, 'cordoned and drained with its own RBAC');
      assert.equal(granted.metadata?.annotations?.[Annotations.state], Phase.rebootGranted);
      // Signed with the key it created and published with that RBAC, for this node and boot.
      const published = await core.readNamespacedConfigMap({ name: GRANT_KEY_NAME, namespace: 'nuo-system' });
      const verdict = verifyGrant(
        publicKeyFromPem(published.data?.[PUBLIC_KEY_FIELD] ?? ''),
        granted.metadata?.annotations?.[Annotations.rebootOk] ?? '',
        { node: 'node-2', bootId: 'boot-of-node-2' },
      );
      assert.deepEqual(verdict, { check: GrantCheck.valid });
      // And the node says so, in the lifecycle conditions nuo may write through nodes/status.
      const told = await pollUntil('MaintenanceInProgress on node-2', async () => {
        const n = await core.readNode({ name: 'node-2' });
        return n.status?.conditions?.find((c) => c.type === LifecycleConditions.maintenanceInProgress);
      });
      assert.equal(told.reason, 'NuoRebootNeeded');
      assert.equal(operator.exitCode, null, 'still running');
    } finally {
      operator.kill('SIGTERM');
      await new Promise((r) => operator.once('exit', r));
      kubectl('delete', '-f', defaultPolicy);
    }
  });

  test("the operator may read the notification receivers' Secret, and no other Secret of its namespace but its key", () => {
    const can = (what: string) =>
      kubectl(
        'auth',
        'can-i',
        'get',
        what,
        '-n',
        'nuo-system',
        '--as=system:serviceaccount:nuo-system:nuo-operator',
      ).stdout.trim();
    assert.equal(can('secret/nuo-notifications'), 'yes');
    assert.equal(can('secret/nuo-grant-key'), 'yes');
    assert.equal(can('secret/someone-elses'), 'no');
  });

  test("the operator may list Leases and Deployments everywhere, and ConfigMaps and Endpoints by CLUO's and FLUO's lock names only, to tell their operator runs, and change none", () => {
    const as = '--as=system:serviceaccount:nuo-system:nuo-operator';
    const can = (...args: string[]) => kubectl('auth', 'can-i', ...args, as).stdout.trim();
    assert.equal(can('list', 'leases.coordination.k8s.io', '--all-namespaces'), 'yes');
    assert.equal(can('list', 'deployments.apps', '--all-namespaces'), 'yes');
    assert.equal(can('update', 'leases.coordination.k8s.io', '-n', 'reboot-coordinator'), 'no');
    assert.equal(can('delete', 'deployments.apps', '-n', 'reboot-coordinator'), 'no');
    assert.equal(
      can('update', 'configmaps/container-linux-update-operator-lock', '-n', 'reboot-coordinator'),
      'no',
    );
    // The lists the operator makes: by name, as RBAC's resourceNames allow; any other list is refused.
    for (const resource of ['configmaps', 'endpoints']) {
      for (const lock of ['container-linux-update-operator-lock', 'flatcar-linux-update-operator-lock']) {
        const byName = kubectl('get', resource, '-A', `--field-selector=metadata.name=${lock}`, as);
        assert.equal(byName.status, 0, `${resource} named ${lock}: ${byName.stderr}`);
      }
      const all = kubectl('get', resource, '-A', as);
      assert.match(all.stderr, /forbidden/, `every ${resource}`);
      const other = kubectl('get', resource, '-A', '--field-selector=metadata.name=someone-elses', as);
      assert.match(other.stderr, /forbidden/, `${resource} of another name`);
    }
  });

  test("with the component suc-plans, the operator may read SUC's Plans and write their status in SUC's namespace only, and change no Plan", () => {
    const can = (...args: string[]) =>
      kubectl('auth', 'can-i', ...args, '--as=system:serviceaccount:nuo-system:nuo-operator').stdout.trim();
    const ns = kubectl('create', 'namespace', 'system-upgrade');
    assert.equal(ns.status, 0, ns.stderr);
    // SUC's CRD, so that kubectl resolves plans.upgrade.cattle.io.
    const crd = fileURLToPath(new URL('../fixtures/suc-crd/upgrade.cattle.io_plans.yaml', import.meta.url));
    assert.equal(kubectl('apply', '-f', crd).status, 0);
    const established = kubectl('wait', '--for=condition=Established', 'crd/plans.upgrade.cattle.io');
    assert.equal(established.status, 0, established.stderr);
    const role = kubectl('apply', '-f', join(deployDir, 'components', 'suc-plans', 'role.yaml'));
    assert.equal(role.status, 0, role.stderr);
    for (const verb of ['get', 'list', 'watch'])
      assert.equal(can(verb, 'plans.upgrade.cattle.io', '-n', 'system-upgrade'), 'yes', verb);
    assert.equal(
      can('patch', 'plans.upgrade.cattle.io', '--subresource=status', '-n', 'system-upgrade'),
      'yes',
    );
    assert.equal(
      can('update', 'plans.upgrade.cattle.io', '--subresource=finalizers', '-n', 'system-upgrade'),
      'yes',
      "its Jobs' owner reference blocks the Plan's deletion",
    );
    assert.equal(
      can('update', 'plans.upgrade.cattle.io', '-n', 'system-upgrade'),
      'no',
      "the spec is not nuo's",
    );
    assert.equal(can('delete', 'plans.upgrade.cattle.io', '-n', 'system-upgrade'), 'no');
    assert.equal(
      can('list', 'plans.upgrade.cattle.io', '-n', 'default'),
      'no',
      "another namespace's SUC Plans",
    );
    assert.equal(can('list', 'plans.upgrade.cattle.io', '--all-namespaces'), 'no');
    assert.equal(
      can('get', 'configmap/default-controller-env', '-n', 'system-upgrade'),
      'yes',
      "SUC's Job settings",
    );
    assert.equal(can('get', 'configmap/another', '-n', 'system-upgrade'), 'no', 'no other ConfigMap');
  });

  test("only the operator may write a Node's status (nuo's lifecycle conditions), not the agent", () => {
    const can = (who: string) =>
      kubectl(
        'auth',
        'can-i',
        'patch',
        'nodes',
        '--subresource=status',
        `--as=system:serviceaccount:nuo-system:${who}`,
      ).stdout.trim();
    assert.equal(can('nuo-operator'), 'yes');
    assert.equal(can('nuo-agent'), 'no');
  });

  test("an agent's token reads the operator's public grant key and ledger, not the private key", async () => {
    const client = new LeanClient({ server: cluster.server, ca: cluster.caCert, token: () => agentToken });
    try {
      const published = await client.getConfigMap('nuo-system', GRANT_KEY_NAME);
      assert.match(published.data?.[PUBLIC_KEY_FIELD] ?? '', /BEGIN PUBLIC KEY/);
      const ledger = await client.getConfigMap('nuo-system', 'nuo-slots');
      assert.match(ledger.data?.['ledger.json'] ?? '', /"slots"/, 'and the ledger, to check the attempt');
      const other = await rejection(client.getConfigMap('nuo-system', 'kube-root-ca.crt'));
      assert.equal(other.status, 403, 'no other ConfigMap');
    } finally {
      client.close();
    }
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'local', server: cluster.server, caData: cluster.caCert.toString('base64') }],
      users: [{ name: 'agent', token: agentToken }],
      contexts: [{ name: 'agent', cluster: 'local', user: 'agent' }],
      currentContext: 'agent',
    });
    const secret = kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: GRANT_KEY_NAME, namespace: 'nuo-system' });
    assert.equal(await statusOf(secret), 403, 'the agent may not read the private key');
  });
});

describe('UpdatePolicy CRD (deploy/base/updatepolicy-crd.yaml)', () => {
  const apply = (policy: { name: string; spec: unknown }) =>
    spawnSync(
      cluster.binaries.path.kubectl,
      [`--kubeconfig=${cluster.kubeconfigPath}`, 'apply', '--server-side', '-f', '-'],
      {
        encoding: 'utf8',
        input: JSON.stringify({
          apiVersion: 'nuo.dev/v1alpha1',
          kind: 'UpdatePolicy',
          metadata: { name: policy.name },
          spec: policy.spec,
        }),
      },
    );

  test('an empty spec is accepted and defaulted by the API server', async () => {
    await pollUntil('the CRD to be established', () => {
      const r = kubectl(
        'get',
        'crd',
        'updatepolicies.nuo.dev',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Established")].status}',
      );
      return r.stdout === 'True' ? true : undefined;
    });
    const r = apply({ name: 'defaults', spec: {} });
    assert.equal(r.status, 0, r.stderr);
    const got = JSON.parse(kubectl('get', 'updatepolicy', 'defaults', '-o', 'json').stdout);
    assert.equal(got.spec.maxUnavailable, 1);
    assert.equal(got.spec.zoneLabel, 'topology.kubernetes.io/zone');
    assert.equal(got.spec.zoneOrder, 'Parallel');
    assert.equal(got.spec.paused, false);
    assert.deepEqual(got.spec.drain, {
      timeout: '10m',
      gracePeriodSeconds: -1,
      deleteEmptyDirData: false,
      force: false,
      podSelector: '',
      skipWaitForDeleteTimeoutSeconds: 0,
    });
    assert.equal(got.spec.reboot.soak, '30s');
    assert.equal(got.spec.reboot.maxIneffectiveReboots, 3);
    const table = kubectl('get', 'updatepolicies');
    assert.match(table.stdout, /^NAME\s+NODES\s+DISRUPTED\s+BUDGET\s+READY\s+BLOCKED\s+AGE$/m);
  });

  test('a full policy with windows, blockers, zones and drain settings is accepted', () => {
    const r = apply({
      name: 'full',
      spec: {
        nodeSelector: { matchExpressions: [{ key: 'pool', operator: 'In', values: ['workers'] }] },
        maxUnavailable: '20%',
        maxUnavailablePerZone: 1,
        zoneOrder: 'OneAtATime',
        windows: {
          weekly: [{ days: ['Mon', 'Tue'], start: '22:00', end: '04:00', timeZone: 'Europe/Berlin' }],
          cron: [{ schedule: '0 3 * * 6', duration: '2h', timeZone: 'America/New_York' }],
          exclusions: [{ start: '2026-12-24', end: '2027-01-02', reason: 'holiday freeze' }],
        },
        blockers: {
          prometheus: {
            url: 'http://prometheus.monitoring:9090',
            alerts: 'Node.*',
            matchers: { severity: 'page' },
          },
          pods: [{ selector: { matchLabels: { app: 'backup' } } }],
        },
        drain: { timeout: '30m', onFailure: { action: 'Skip', afterAttempts: 2 } },
        reboot: { soak: '2m', beforeRebootAnnotations: ['example.com/ready'] },
        circuitBreaker: { maxNotReady: '30%' },
      },
    });
    assert.equal(r.status, 0, r.stderr);
  });

  test('the example policies under deploy/policies are accepted and resolve without a problem', () => {
    const dir = join(deployDir, 'policies');
    const applied = kubectl('apply', '--dry-run=server', '-o', 'json', '-f', dir);
    assert.equal(applied.status, 0, applied.stderr);
    const items = (JSON.parse(applied.stdout) as { items?: unknown[] }).items ?? [JSON.parse(applied.stdout)];
    assert.ok(items.length > 0, 'at least one example policy');
    for (const p of items as UpdatePolicy[]) {
      const r = resolvePolicy(p);
      assert.ok(r.ok, `${p.metadata.name}: ${JSON.stringify(!r.ok && r.errors)}`);
    }
  });

  // Each refused with the field named and what is accepted: nothing reaches the operator.
  const refused: [string, unknown, RegExp][] = [
    ['maxUnavailable 0', { maxUnavailable: 0 }, /maxUnavailable: Invalid value.*at least 1 or a percentage/],
    [
      'maxUnavailable 0%',
      { maxUnavailable: '0%' },
      /maxUnavailable: Invalid value.*percentage from 1% to 100%/,
    ],
    ['maxUnavailable 101%', { maxUnavailable: '101%' }, /maxUnavailable: Invalid value/],
    ['maxUnavailable words', { maxUnavailable: 'two' }, /maxUnavailable: Invalid value/],
    ['a zone cap of -1', { maxUnavailablePerZone: -1 }, /maxUnavailablePerZone: Invalid value/],
    ['an unknown zone order', { zoneOrder: 'Random' }, /zoneOrder: Unsupported value: "Random"/],
    [
      'a window without days',
      { windows: { weekly: [{ days: [], start: '01:00', end: '02:00' }] } },
      /days: Invalid value: 0: .*at least 1 items/,
    ],
    [
      'a day by its full name',
      { windows: { weekly: [{ days: ['Monday'], start: '01:00', end: '02:00' }] } },
      /days\[0\]: Unsupported value: "Monday"/,
    ],
    [
      'a day twice',
      { windows: { weekly: [{ days: ['Mon', 'Mon'], start: '01:00', end: '02:00' }] } },
      /weekly\[0\]\.days: duplicate entries for key \[="Mon"\]/,
    ],
    [
      'a start of 25:00',
      { windows: { weekly: [{ days: ['Mon'], start: '25:00', end: '02:00' }] } },
      /start: Invalid value: "25:00"/,
    ],
    [
      'a cron window of 0s',
      { windows: { cron: [{ schedule: '0 3 * * *', duration: '0s' }] } },
      /cron\[0\].duration: Invalid value.*more than 0 and at most 168h/,
    ],
    [
      'a cron window over a week',
      { windows: { cron: [{ schedule: '0 3 * * *', duration: '169h' }] } },
      /cron\[0\].duration: Invalid value.*at most 168h/,
    ],
    [
      'a drain timeout in words',
      { drain: { timeout: '10 minutes' } },
      /drain.timeout: Invalid value: "10 minutes"/,
    ],
    [
      'an ftp Prometheus',
      { blockers: { prometheus: { url: 'ftp://prometheus:9090' } } },
      /prometheus.url: Invalid value/,
    ],
    [
      'a Prometheus URL without host',
      { blockers: { prometheus: { url: 'http://' } } },
      /prometheus.url: Invalid value.*with a host/,
    ],
    [
      'an unknown selector operator',
      { nodeSelector: { matchExpressions: [{ key: 'a', operator: 'Like' }] } },
      /operator: Unsupported value: "Like"/,
    ],
    ['an unknown field', { maxUnavailabel: 2 }, /\.spec\.maxUnavailabel: field not declared in schema/],
    [
      'skip after 0 attempts',
      { drain: { onFailure: { action: 'Skip', afterAttempts: 0 } } },
      /afterAttempts: Invalid value: 0/,
    ],
  ];
  for (const [what, spec, message] of refused) {
    test(`refused by the API server: ${what}`, () => {
      const r = apply({ name: 'bad', spec });
      assert.notEqual(r.status, 0, `${what} was accepted`);
      assert.match(r.stderr, message);
    });
  }

  test('refused by the API server: a name longer than 63 characters', () => {
    const r = apply({ name: 'p'.repeat(64), spec: {} });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /at most 63 characters/);
  });
});
