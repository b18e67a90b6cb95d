/**
 * npm run bench:vm-memory [-- --idle-seconds S]
 *
 * nuo's agent beside kured 1.23 on the same real node: two VM nodes join the local control plane, nuo is
 * installed from its chart (its operator on vm-1) and kured from its own manifests (built from its pinned
 * source), both DaemonSets on vm-0. A sampler in vm-0 reads each container's cgroup every 2 s: the
 * working set (memory.current − inactive_file, what the kubelet and `kubectl top` report), the cgroup's
 * peak (memory.peak, the kernel's own high-water mark) and the resident set of its processes. Three
 * phases: idle for S seconds (default 300); nuo rebooting vm-0 (Debian's sentinel), then idle after the
 * boot; kured rebooting vm-0 (its own sentinel; it drains from its pod), then idle after that boot.
 * Goal: nuo's agent ≤ kured.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { Annotations } from '../src/api/keys.ts';
import { Phase } from '../src/api/phases.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { isReady } from '../src/sim/cluster/nodes.ts';
import { startRegistry } from '../src/sim/cluster/registry.ts';
import { VM_NODE_LABEL } from '../src/sim/vm/config-disk.ts';
import { installFromRegistry, NS } from '../src/sim/vm/install-nuo.ts';
import { startVmNodes, type VmNode } from '../src/sim/vm/vms.ts';
import { pollUntil } from '../src/util/poll.ts';
import { helmIn } from '../tools/helm/run.ts';
import { KURED } from '../tools/kured/build.ts';
import { ensureKuredImage } from '../tools/kured/image.ts';
import { kuredManifests } from '../tools/kured/manifests.ts';
import type { Manifest } from '../tools/manifests.ts';
import { publish } from './report.ts';
import { goalVerdict, memoryRows, parseSamples, type Sample } from './vm-memory-samples.ts';

const { values } = parseArgs({
  options: { 'idle-seconds': { type: 'string', default: '300' } },
  strict: true,
});
const idleSeconds = Number(values['idle-seconds']);
if (!(idleSeconds >= 30))
  throw new Error(`--idle-seconds must be at least 30, got ${values['idle-seconds']}`);

const log = (line: string) => process.stderr.write(`# ${line}\n`);
/** kured's own sentinel, so that Debian's (which nuo's agent reads) asks only nuo for a reboot. */
const KURED_SENTINEL = 'kured-reboot-required';
const MEASURED = 'vm-0';
const SAMPLES = '/var/lib/nuo-bench/memory';
const SAMPLER_PATH = '/var/lib/nuo-bench/sampler.sh';
/**
 * Samples each `name=containerID` argument's cgroup every 2 s into SAMPLES: milliseconds, name,
 * memory.current, inactive_file, memory.peak (bytes) and its processes' summed VmRSS (KiB).
 */
const SAMPLER = `declare -A dir
for pair in "$@"; do
  dir[\${pair%%=*}]=$(find /sys/fs/cgroup/kubepods.slice -type d -name "cri-containerd-\${pair#*=}.scope" -print -quit)
done
while :; do
  for name in "\${!dir[@]}"; do
    d=\${dir[$name]}
    [ -n "$d" ] && [ -e "$d/memory.current" ] || continue
    rss=0
    for p in $(cat "$d/cgroup.procs"); do r=$(awk '/^VmRSS/ { print $2 }' /proc/$p/status 2>/dev/null); rss=$((rss + \${r:-0})); done
    echo "$(date +%s%3N) $name $(cat "$d/memory.current") $(awk '$1 == "inactive_file" { print $2 }' "$d/memory.stat") $(cat "$d/memory.peak") $rss"
  done >> ${SAMPLES}
  sleep 2
done`;

const cluster = await startCluster({ nodes: 1 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const registry = await startRegistry();
const work = mkdtempSync(join(tmpdir(), 'nuo-bench-vm-memory-'));
const samplerFile = join(work, 'sampler.sh');
writeFileSync(samplerFile, SAMPLER);
const phases: { name: string; samples: Sample[] }[] = [];
let accel = '';
try {
  const fleet = await startVmNodes(cluster, { registry: registry.host, log });
  accel = fleet.accel.toUpperCase();
  const slow = fleet.accel === 'tcg' ? 5 : 1;
  const vm = fleet.node(MEASURED);
  installFromRegistry({
    registry: registry.host,
    helm: await helmIn(join(work, 'helm')),
    kubeconfigPath: cluster.kubeconfigPath,
    operatorNode: 'vm-1',
    log,
  });
  await applyKured(await pushKured());
  await pollUntil(
    "nuo's agents and kured Ready on both VMs, nuo's operator available",
    async () => {
      const agent = await apps.readNamespacedDaemonSet({ name: 'nuo-agent', namespace: NS });
      const kured = await apps.readNamespacedDaemonSet({ name: 'kured', namespace: 'kube-system' });
      const op = await apps.readNamespacedDeployment({ name: 'nuo-operator', namespace: NS });
      return agent.status?.numberReady === 2 &&
        kured.status?.numberReady === 2 &&
        (op.status?.availableReplicas ?? 0) >= 1
        ? true
        : undefined;
    },
    { timeoutMs: 1_800_000, intervalMs: 2000 },
  );

  const bootId = async () => (await core.readNode({ name: MEASURED })).status?.nodeInfo?.bootID ?? '';
  const rebootedBy = async (who: string, sentinel: string, done: (n: V1Node) => boolean) => {
    const before = await bootId();
    await sample(
      vm,
      async () => {
        const touched = await vm.exec(`touch /var/run/${sentinel}`);
        if (touched.code !== 0) throw new Error(`touch /var/run/${sentinel}: ${touched.stderr}`);
        await fleet.waitForNode(
          MEASURED,
          `rebooted by ${who}, Ready and uncordoned`,
          (n) =>
            (n.status?.nodeInfo?.bootID ?? before) !== before &&
            isReady(n) &&
            !n.spec?.unschedulable &&
            done(n),
          1_800_000,
        );
      },
      `${who} rebooting ${MEASURED}`,
    );
    await containersReady();
    await sample(vm, () => sleep(120_000), `idle for 120 s after ${who}'s reboot`);
  };

  await containersReady();
  await sample(vm, () => sleep(idleSeconds * 1000), `idle for ${idleSeconds} s`);
  await rebootedBy(
    'nuo',
    'reboot-required',
    (n) => (n.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle,
  );
  await rebootedBy(`kured ${KURED.version}`, KURED_SENTINEL, () => true);
  log(`VMs under ${accel}; timeouts ×${slow}`);
} finally {
  await cluster.stop();
  await registry.stop();
  rmSync(work, { recursive: true, force: true });
}

publish({
  id: 'vm-memory',
  title: `nuo's agent beside kured ${KURED.version} on a real node (VM, ${accel})`,
  versions: cluster.binaries.versions,
  command: `npm run bench:vm-memory -- --idle-seconds ${idleSeconds}`,
  body: [
    '| phase | container | working set median | working set max | cgroup peak | RSS median | RSS max |',
    '|---|---|---|---|---|---|---|',
    ...phases.flatMap((p) => memoryRows(p.name, p.samples)),
    '',
    `Both DaemonSets run on the same VM node (Debian 12, containerd, a kubelet of the control plane's release),`,
    "nuo's from its chart and image, kured's from its own manifests and an image of kured built from its pinned",
    'source (kured drains from its pod, so its drain is in its figures; nuo drains from the operator, on',
    "another VM). Working set: memory.current − inactive_file of the container's cgroup, as the kubelet",
    'reports it; cgroup peak: memory.peak at the end of the phase (since the container started). Goal:',
    "nuo's agent ≤ kured.",
    '',
    goalVerdict(phases, 'nuo-agent', 'kured'),
  ].join('\n'),
});

/** Runs `during` while the sampler records vm-0's two containers; keeps the samples as a phase. */
async function sample(node: VmNode, during: () => Promise<void>, name: string): Promise<void> {
  const ids = await containerIds();
  const args = Object.entries(ids).map(([n, id]) => `${n}=${id}`);
  await node.exec(`rm -f ${SAMPLES} && mkdir -p ${dirname(SAMPLER_PATH)}`);
  // A file, not `bash -c`: systemd-run expands $VAR and ${VAR} in the command line it is given.
  await node.copyTo(samplerFile, SAMPLER_PATH);
  const started = await node.exec(
    `systemd-run --unit nuo-bench-sampler --collect /bin/bash ${SAMPLER_PATH} ${args.join(' ')}`,
  );
  if (started.code !== 0) throw new Error(`starting the sampler in ${node.name}: ${started.stderr}`);
  log(`sampling ${Object.keys(ids).join(', ')} on ${node.name}: ${name}`);
  await during();
  await node.exec('systemctl stop nuo-bench-sampler');
  const read = await node.exec(`cat ${SAMPLES}`);
  const samples = parseSamples(read.stdout);
  if (samples.length === 0) throw new Error(`no samples from ${node.name} (${name}): ${read.stderr}`);
  phases.push({ name, samples });
}

/** The container IDs of nuo's agent and kured on vm-0, as the kubelet reports them. */
async function containerIds(): Promise<Record<string, string>> {
  const onNode = async (namespace: string) =>
    (await core.listNamespacedPod({ namespace, fieldSelector: `spec.nodeName=${MEASURED}` })).items;
  const running = (p: V1Pod) =>
    !p.metadata?.deletionTimestamp && !!p.status?.containerStatuses?.[0]?.state?.running;
  const id = (pods: V1Pod[], match: (p: V1Pod) => boolean, what: string) => {
    const raw = pods.find((p) => match(p) && running(p))?.status?.containerStatuses?.[0]?.containerID ?? '';
    if (!raw.startsWith('containerd://')) throw new Error(`no running ${what} container on ${MEASURED}`);
    return raw.slice('containerd://'.length);
  };
  return {
    'nuo-agent': id(
      await onNode(NS),
      (p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'agent',
      "nuo's agent",
    ),
    kured: id(await onNode('kube-system'), (p) => p.metadata?.labels?.name === 'kured', 'kured'),
  };
}

/** Waits until both containers on vm-0 run, in pods not being deleted. */
async function containersReady(): Promise<void> {
  await pollUntil(
    `nuo's agent and kured running on ${MEASURED}`,
    () =>
      containerIds().then(
        () => true,
        () => undefined,
      ),
    { timeoutMs: 1_200_000, intervalMs: 2000 },
  );
}

/** Pushes kured's image to the local registry; returns its reference there. */
async function pushKured(): Promise<string> {
  const image = await ensureKuredImage(log);
  const ref = `${registry.host}/kubereboot/kured:${image.tag}`;
  const push = spawnSync(
    'skopeo',
    ['copy', '--dest-tls-verify=false', `oci:${image.layout}:${image.tag}`, `docker://${ref}`],
    {
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  if (push.status !== 0) throw new Error(`skopeo copy to ${ref}: ${push.stderr}`);
  return ref;
}

/**
 * kured's manifests as they ship, with three changes: the image built here, kured's own sentinel file and
 * a 1-minute check period (its default is an hour), and its pods on the VMs (KWOK's node runs none).
 */
async function applyKured(image: string): Promise<void> {
  const objects = (await kuredManifests(log)).map((o) =>
    o.kind === 'DaemonSet' ? kuredDaemonSet(o, image) : o,
  );
  const r = spawnSync(
    cluster.binaries.path.kubectl,
    [`--kubeconfig=${cluster.kubeconfigPath}`, 'apply', '-f', '-'],
    {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`kubectl apply of kured's manifests: ${r.stdout}${r.stderr}`);
}

function kuredDaemonSet(ds: Manifest, image: string): Manifest {
  const spec = ds.spec as {
    template: { spec: { nodeSelector?: object; containers: { image: string; command: string[] }[] } };
  };
  const pod = spec.template.spec;
  pod.nodeSelector = { [VM_NODE_LABEL]: 'true' };
  for (const c of pod.containers) {
    c.image = image;
    c.command = [
      ...c.command.filter((a) => !a.startsWith('--reboot-sentinel=') && !a.startsWith('--period=')),
      `--reboot-sentinel=/sentinel/${KURED_SENTINEL}`,
      '--period=1m',
    ];
  }
  return ds;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
