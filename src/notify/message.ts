/**
 * A pool's news as the receivers of its notifications get it: a JSON object, or a Slack-compatible
 * incoming-webhook message. Pure, so every format is a table test.
 */
import type { NotifyOn } from '../api/update-policy.ts';

export interface NotifyEvent {
  kind: NotifyOn;
  /** The UpdatePolicy whose pool it is about. */
  policy: string;
  node?: string;
  /** The Plan ("namespace/name") whose attempt it is about; none for a reboot's. */
  plan?: string;
  message: string;
  at: Date;
}

/** What happened, in a few words: a reboot's attempt, or a Plan's (which may not reboot at all). */
function headline(e: NotifyEvent): string {
  switch (e.kind) {
    case 'Admitted':
      return e.plan ? `admitted to apply Plan ${e.plan}` : 'admitted for reboot';
    case 'Completed':
      return e.plan ? `applied Plan ${e.plan} and healthy` : 'rebooted and healthy';
    case 'Failed':
      return e.plan ? `failed to apply Plan ${e.plan}` : 'failed';
    case 'Blocked':
      return 'blocked';
    case 'Finished':
      return 'rollout finished';
    case 'Halted':
      return 'rollout halted';
  }
}

/** The request body for a receiver of `format`. */
export function payload(format: 'JSON' | 'Slack', e: NotifyEvent): Record<string, unknown> {
  if (format === 'Slack') {
    const subject = e.node ? `node ${e.node} (UpdatePolicy ${e.policy})` : `UpdatePolicy ${e.policy}`;
    return { text: `nuo: ${subject} ${headline(e)}: ${e.message}` };
  }
  return {
    source: 'nuo',
    kind: e.kind,
    policy: e.policy,
    ...(e.node ? { node: e.node } : {}),
    ...(e.plan ? { plan: e.plan } : {}),
    message: e.message,
    time: e.at.toISOString(),
  };
}
