/**
 * What nodes show that a person must fix — malformed annotations, a problem the agent reports — told
 * once: a Warning Event and a log line the first time a node shows a given message, nothing while it
 * stays, and again only if it changes or comes back after it was gone.
 */
import { Annotations } from '../../api/keys.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { MALFORMED } from '../decide/need.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { OperatorMetrics } from '../metrics.ts';
import type { EventRecorder } from './events.ts';

/** Longest problem quoted in a log line. */
const LOG_MAX = 512;

export class ProblemReports {
  /** What was last reported of each node and kind: node/reason → message. */
  readonly #reported = new Map<string, string>();
  readonly #events: EventRecorder;
  readonly #log: KubeLog;
  readonly #metrics: OperatorMetrics | undefined;

  constructor(events: EventRecorder, log: KubeLog, metrics?: OperatorMetrics) {
    this.#events = events;
    this.#log = log;
    this.#metrics = metrics;
  }

  /** A new leadership reports afresh. */
  clear(): void {
    this.#reported.clear();
  }

  /** Reports what is new among `nodes`' problems and forgets those that are gone. */
  report(nodes: readonly NodeView[]): void {
    const seen = new Set<string>();
    for (const n of nodes) {
      const malformed = n.problems.length > 0 ? `${MALFORMED}${n.problems.join('; ')}` : undefined;
      const agent = n.annotations[Annotations.agentProblem];
      if (malformed)
        this.#once(seen, n.name, 'MalformedAnnotation', malformed, 'malformed annotations ignored');
      if (agent) this.#once(seen, n.name, 'AgentProblem', agent, "the node's agent reports a problem");
    }
    for (const key of this.#reported.keys()) if (!seen.has(key)) this.#reported.delete(key);
    this.#metrics?.agentProblems.set(nodes.filter((n) => n.annotations[Annotations.agentProblem]).length);
  }

  #once(seen: Set<string>, node: string, reason: string, message: string, line: string): void {
    const key = `${node}/${reason}`;
    seen.add(key);
    if (this.#reported.get(key) === message) return;
    this.#reported.set(key, message);
    this.#events.warning(node, reason, message);
    this.#log('warn', line, {
      node,
      problem: message.length > LOG_MAX ? `${message.slice(0, LOG_MAX)}…` : message,
    });
  }
}
