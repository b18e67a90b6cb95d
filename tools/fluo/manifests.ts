/**
 * The agent's half of FLUO's examples/deploy as it ships at the pinned commit (tools/fluo/build.ts's
 * source): its namespace, the agent's ServiceAccount, ClusterRole and ClusterRoleBinding, and the
 * update-agent DaemonSet. The operator's half is left out: nuo takes its place.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { inSourceTree, pinnedSource } from '../third-party.ts';
import { FLUO } from './build.ts';

const checkout = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export type Manifest = Record<string, unknown> & {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
};

/** The files of examples/deploy the agent needs, in the order they apply. */
const AGENT_FILES = [
  '00-namespace.yaml',
  'update-agent-sa.yaml',
  'rbac/cluster-role.yaml',
  'rbac/cluster-role-binding.yaml',
  'update-agent.yaml',
];

/** The agent's objects among every object of AGENT_FILES (the RBAC files hold the operator's too). */
export function agentObjects(objects: Manifest[]): Manifest[] {
  return objects.filter((o) => o.kind === 'Namespace' || !o.metadata?.name?.includes('update-operator'));
}

/** FLUO's agent manifests, read from its pinned source. Throws if a file is missing or does not parse. */
export async function fluoAgentManifests(log: (line: string) => void = () => {}): Promise<Manifest[]> {
  const source = pinnedSource(FLUO, process.env, checkout, existsSync);
  const work = await mkdtemp(join(tmpdir(), 'nuo-fluo-manifests-'));
  try {
    return await inSourceTree(FLUO, source, work, log, async (dir) => {
      const objects: Manifest[] = [];
      for (const file of AGENT_FILES) {
        for (const doc of parseAllDocuments(await readFile(join(dir, 'examples/deploy', file), 'utf8'))) {
          if (doc.errors.length > 0) throw new Error(`FLUO's ${file}: ${doc.errors[0]?.message}`);
          const object = doc.toJS() as Manifest | null;
          if (object) objects.push(object);
        }
      }
      return agentObjects(objects);
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
