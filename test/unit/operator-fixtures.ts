/** What the operator's unit tests share: decide()'s configuration as the defaults of a test cluster. */
import { parseSelector } from '../../src/kube/selector.ts';
import { parseMaxUnavailable } from '../../src/operator/budget.ts';
import type { DecideConfig } from '../../src/operator/decide.ts';

/** One slot, every node eligible, 10-minute timeouts, a 30 s soak, no hooks, a 1-minute retry backoff. */
export const decideConfig: DecideConfig = {
  maxUnavailable: parseMaxUnavailable('1'),
  eligible: parseSelector(''),
  minGrantSpacingMs: 0,
  drainTimeoutMs: 600_000,
  rebootTimeoutMs: 600_000,
  returnTimeoutMs: 600_000,
  soakMs: 30_000,
  beforeRebootAnnotations: [],
  afterRebootAnnotations: [],
  retryBackoffMs: 60_000,
  retryBackoffMaxMs: 3_600_000,
  maxIneffectiveReboots: 3,
  paused: false,
  pendingTaint: false,
};
