/**
 * The labels and annotations a test puts on a Job's pods (a Plan's Job copies the Plan's own) to steer
 * them through the testing ground: KWOK's stages (tools/cluster/kwok/stages) and the simulated hosts.
 */

export const SimJobLabels = {
  /** "fail": the pod fails (KWOK stage job-fail: exit code 1, reason Error); any other value completes. */
  outcome: 'sim.nuo.dev/job-outcome',
  /** "true": once the pod runs, its node's simulated host reboots (job-reboots.ts), as SUC's kernel Job does. */
  rebootsHost: 'sim.nuo.dev/job-reboots-host',
} as const;

export const SimJobAnnotations = {
  /** A Go duration ("3s"): how long a completing pod runs first (KWOK's own key; none by default). */
  completeDelay: 'pod-complete.stage.kwok.x-k8s.io/delay',
  /** A Go duration: how long a failing pod runs first (none by default). */
  failDelay: 'job-fail.stage.sim.nuo.dev/delay',
  /** The failed container's message (a default names the label). */
  failMessage: 'job-fail.stage.sim.nuo.dev/message',
} as const;
