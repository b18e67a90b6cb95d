/**
 * npm run bench:image [-- --seconds S]
 *
 * The agent as a node runs it: the image (tools/image/build.ts, built or found in the cache) unpacked
 * with umoci and run under runc as user 65532 with no capabilities and a read-only root, on the host
 * network against the local control plane, with deploy/base's detector (sentinel file); the rebooter is
 * the signal one, never fired while idle. Once it has labelled its node (its watch open), its resident
 * memory is sampled every second for S seconds (default 60), with its CPU, the node writes it made
 * meanwhile (goal: none) and, at the end, its anonymous and file-backed parts. Publishes the image's size
 * too.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { Labels } from '../src/api/keys.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { sampleProc } from '../src/sim/cluster/proc.ts';
import { pollUntil } from '../src/util/poll.ts';
import { buildImage } from '../tools/image/build.ts';
import { startAgent } from '../tools/image/containers.ts';
import { mib } from '../tools/image/layout.ts';
import { Runc } from '../tools/image/runc.ts';
import { LAYERS } from '../tools/image/spec.ts';
import { publish } from './report.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' } }, strict: true });
const seconds = Number(values.seconds);
if (!(seconds >= 5)) throw new Error(`--seconds must be at least 5, got ${values.seconds}`);

const image = buildImage((line) => process.stderr.write(`${line}\n`));
const work = mkdtempSync(join(tmpdir(), 'nuo-bench-image-'));
const unpacked = Runc.unpack(image.layout, image.tag, join(work, 'unpacked'));
const runc = new Runc();
const cluster = await startCluster({ nodes: 1 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);

let row: string;
try {
  const agent = startAgent(runc, unpacked, { work, kubeconfigPath: cluster.kubeconfigPath });
  try {
    const started = performance.now();
    await pollUntil('the agent in the container to label node-0', async () => {
      if (agent.process.exitCode !== null) throw new Error(`the container exited:\n${agent.output()}`);
      const n = await core.readNode({ name: 'node-0' });
      return n.metadata?.labels?.[Labels.osId] === 'flatcar' ? n : undefined;
    });
    const startupMs = performance.now() - started;
    const pid = agent.pid();
    const sample = () => {
      const s = sampleProc(pid);
      if (!s) throw new Error(`the agent (pid ${pid}) exited during the measurement:\n${agent.output()}`);
      return s;
    };
    const rvBefore = (await core.readNode({ name: 'node-0' })).metadata?.resourceVersion;
    const first = sample();
    const rss: number[] = [];
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      rss.push(sample().rssMiB);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const last = sample();
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) =>
      Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1]) / 1024;
    const rvAfter = (await core.readNode({ name: 'node-0' })).metadata?.resourceVersion;
    rss.sort((a, b) => a - b);
    const cpu = last.cpuSeconds - first.cpuSeconds;
    row = `| ${(startupMs / 1000).toFixed(2)} s | **${rss[Math.floor(rss.length / 2)]?.toFixed(1)} MiB** | ${rss.at(-1)?.toFixed(1)} MiB | ${last.peakRssMiB.toFixed(1)} MiB | ${kib('RssAnon').toFixed(1)} MiB / ${kib('RssFile').toFixed(1)} MiB | ${cpu.toFixed(2)} s (${((cpu / seconds) * 100).toFixed(2)} %) | ${rvBefore === rvAfter ? 0 : 'some'} |`;
  } finally {
    await agent.stop();
  }
} finally {
  await cluster.stop();
  runc.close();
  rmSync(work, { recursive: true, force: true });
}

const layers = LAYERS.map((l, i) => `${l} ${mib(image.layerBytes[i] ?? 0)}`).join(', ');
publish({
  id: 'image',
  title: `The image, and the idle agent inside it under runc over ${seconds} s`,
  versions: cluster.binaries.versions,
  command: `npm run bench:image -- --seconds ${seconds}`,
  body: [
    `Image \`${image.ref}\` (revision ${image.revision}): ${mib(image.compressedBytes)} compressed (${layers}), ${mib(image.unpackedBytes)} unpacked.`,
    '',
    'The agent in it under runc as deploy/base runs it (user 65532, no capabilities, read-only root), on the host network, detector sentinel-file, watch open and node labelled:',
    '',
    '| start-up to node labelled | RSS median | RSS max sampled | peak RSS (VmHWM) | RSS at the end: anonymous / file-backed | CPU over the window | node writes while idle |',
    '|---|---|---|---|---|---|---|',
    row,
    '',
    "Anonymous memory is the agent's own (V8's heap, OpenSSL, buffers); file-backed pages are mostly Node's binary, shared by every process that maps the same file. deploy/base limits the agent's container to 96 MiB.",
    '',
    'Why the agent ships on Node 24 rather than a leaner runtime, against these figures: [decision 0038](decisions/0038-agent-runtime.md).',
  ].join('\n'),
});
