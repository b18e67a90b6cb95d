/**
 * Sends a step's node write (node-writes.ts) as one conditional merge patch, and the end of an attempt
 * with the undoing of nuo's own cordon as one conditional write; the cache takes each result. A 409 or
 * 404 is a Conflict: the caller re-reads and re-decides.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../api/keys.ts';
import { uncordonWith } from '../../drain/cordon.ts';
import { statusCode } from '../../kube/errors.ts';
import { mergePatch } from '../../kube/patch.ts';
import { type NodeView, withPendingTaints } from '../decide/node-view.ts';
import type { NodeWrite } from './node-writes.ts';

/** The node changed since the decision (409), or is gone (404): re-read and re-decide. */
export class Conflict extends Error {}

/** The operator's node cache, as the writer uses it: the copy it decided on, and each write's result. */
export interface NodeCache {
  get(name: string): V1Node | undefined;
  upsertFromWrite(node: V1Node): void;
}

/** Tries at the end of an attempt before the step fails and a later pass tries again. */
const END_ATTEMPTS = 5;

export class NodeWriter {
  readonly #cache: NodeCache;
  readonly #acting: () => boolean;
  /** A node as the decisions read it (through the protocol its agent speaks). */
  readonly #view: (node: V1Node) => NodeView;

  /** Told each node this writer wrote, as written: a phase it wrote is seen from that moment. */
  readonly #wrote: (node: V1Node) => void;

  constructor(
    cache: NodeCache,
    acting: () => boolean,
    view: (node: V1Node) => NodeView,
    wrote: (node: V1Node) => void = () => {},
  ) {
    this.#cache = cache;
    this.#acting = acting;
    this.#view = view;
    this.#wrote = wrote;
  }

  /**
   * One conditional merge patch of a node's annotations and labels; with `taint`, its reboot-pending
   * taints (the whole taint list as read, so the resourceVersion guards an admin's taints too); with
   * `cordon`, nuo's cordon and its record, unless the node is unschedulable already (an admin's cordon
   * is never recorded as nuo's). The result updates the cache.
   */
  async patch(view: NodeView, write: NodeWrite, core: CoreV1Api): Promise<V1Node> {
    const { annotations, labels, taint } = write;
    const cordon = write.cordon === true && !view.unschedulable;
    const spec = {
      ...(taint === undefined ? {} : { taints: withPendingTaints(view.taints, taint) }),
      ...(cordon ? { unschedulable: true } : {}),
    };
    try {
      const node = await core.patchNode(
        {
          name: view.name,
          body: {
            metadata: {
              resourceVersion: view.resourceVersion,
              annotations: cordon ? { ...annotations, [Annotations.cordonedByNuo]: 'true' } : annotations,
              ...(labels ? { labels } : {}),
            },
            ...(Object.keys(spec).length ? { spec } : {}),
          },
        },
        mergePatch,
      );
      this.#cache.upsertFromWrite(node);
      this.#wrote(node);
      return node;
    } catch (err) {
      if (statusCode(err) === 409 || statusCode(err) === 404)
        throw new Conflict(`node ${view.name} changed meanwhile`);
      throw err;
    }
  }

  /**
   * Writes the end of an attempt together with the undoing of nuo's own cordon; the cache takes the
   * result. Only while the node is still in the phase the decision saw (else Conflict: re-decide). The
   * cached node is written on first, with no read: it is what the decision saw, and a stale copy is a 409.
   */
  async endAttempt(
    decidedOn: Pick<NodeView, 'name' | 'state'>,
    core: CoreV1Api,
    write: (node: NodeView) => NodeWrite,
  ) {
    const { name } = decidedOn;
    // Recover open: keep trying until the uncordon lands (a 409 is retried inside).
    for (let attempt = 1; ; attempt++) {
      try {
        const check = (n: V1Node) => {
          const fresh = this.#view(n);
          if (fresh.state !== decidedOn.state)
            throw new Conflict(`node ${name} is ${fresh.state} now, not ${decidedOn.state}`);
          const { annotations, labels, taint } = write(fresh);
          const taints = taint === undefined ? undefined : withPendingTaints(fresh.taints, taint);
          return { annotations, labels, ...(taints ? { taints } : {}) };
        };
        const known = attempt === 1 ? this.#cache.get(name) : undefined;
        const { node } = await uncordonWith(core, name, check, known);
        this.#cache.upsertFromWrite(node);
        this.#wrote(node);
        return;
      } catch (err) {
        if (err instanceof Conflict || attempt >= END_ATTEMPTS || !this.#acting()) throw err;
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  }
}
