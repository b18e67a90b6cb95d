/**
 * The agent's half of FLUO's examples/deploy as it ships at the pinned commit (tools/fluo/build.ts's
 * source): its namespace, the agent's ServiceAccount, ClusterRole and ClusterRoleBinding, and the
 * update-agent DaemonSet. The operator's half is left out: nuo takes its place.
 */
import { type Manifest, pinnedManifests } from '../manifests.ts';
import { FLUO } from './build.ts';

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
  return agentObjects(
    await pinnedManifests(
      FLUO,
      AGENT_FILES.map((f) => `examples/deploy/${f}`),
      log,
    ),
  );
}
