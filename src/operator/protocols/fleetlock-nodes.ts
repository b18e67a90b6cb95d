/**
 * The operator's side of its FleetLock server: the nodes a client's ID names (the app-specific ID of each
 * Node's `status.nodeInfo.machineID`), read as decide() reads them, and the handler's one write.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { AgentProtocol } from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import type { FleetLockNode } from '../../fleetlock/answer.ts';
import { appSpecificId } from '../../fleetlock/node-id.ts';
import type { FleetLockBackend } from '../../fleetlock/server.ts';
import { mergePatch } from '../../kube/patch.ts';
import { fleetLockNeed } from '../decide/agent-protocol.ts';
import type { NodeView } from '../decide/node-view.ts';

export interface FleetLockNodesOptions {
  core: CoreV1Api;
  nodes: { list(): V1Node[]; upsertFromWrite(node: V1Node): unknown };
  /** A node as decide() reads it, and its pool, as the last pass planned the pools. */
  view: (node: V1Node) => NodeView;
  poolOf: (node: string) => string | undefined;
  acting: () => boolean;
  /** The leading replica's advertised FleetLock URL, when another leads. */
  leader: () => string | undefined;
}

/** How a node reads to the FleetLock server: its FleetLock pool, its phase, its grant on this boot. */
export function fleetLockNode(view: NodeView, pool: string | undefined): FleetLockNode {
  const grantPhase = view.state === Phase.rebootGranted || view.state === Phase.rebooting;
  return {
    name: view.name,
    ...(view.protocol === AgentProtocol.fleetlock && pool !== undefined ? { pool } : {}),
    phase: view.state ?? Phase.idle,
    ...(view.stateReason ? { stateReason: view.stateReason } : {}),
    grantedThisBoot: grantPhase && view.grantShown && view.bootIdBefore === view.bootId && view.bootId !== '',
    needRecorded: fleetLockNeed(view.annotations),
  };
}

export class FleetLockNodes implements FleetLockBackend {
  readonly #o: FleetLockNodesOptions;
  /** Each machine ID's derived ID (an HMAC per node per request is waste). */
  readonly #ids = new Map<string, string | undefined>();

  constructor(options: FleetLockNodesOptions) {
    this.#o = options;
  }

  refusal(): string | undefined {
    return this.#o.acting() ? undefined : 'this replica of the operator does not lead now';
  }

  leader(): string | undefined {
    return this.#o.leader();
  }

  nodes(id: string): FleetLockNode[] {
    return this.#o.nodes
      .list()
      .filter((n) => this.#idOf(n.status?.nodeInfo?.machineID) === id)
      .map((n) => fleetLockNode(this.#o.view(n), this.#o.poolOf(n.metadata?.name ?? '')));
  }

  #idOf(machineId: string | undefined): string | undefined {
    if (!machineId) return undefined;
    if (!this.#ids.has(machineId)) this.#ids.set(machineId, appSpecificId(machineId));
    return this.#ids.get(machineId);
  }

  /**
   * A merge patch of the handler's keys, unconditional: only this handler writes them, and a request that
   * lands after another's asks for what the client asks for now.
   */
  async annotate(node: string, annotations: Record<string, string | null>): Promise<void> {
    const written = await this.#o.core.patchNode(
      { name: node, body: { metadata: { annotations } } },
      mergePatch,
    );
    this.#o.nodes.upsertFromWrite(written);
  }
}
