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
  message: string;
  at: Date;
}

const HEADLINES: Record<NotifyOn, string> = {
  Admitted: 'admitted for reboot',
  Completed: 'rebooted and healthy',
  Failed: 'failed',
  Blocked: 'blocked',
  Finished: 'rollout finished',
};

/** The request body for a receiver of `format`. */
export function payload(format: 'JSON' | 'Slack', e: NotifyEvent): Record<string, unknown> {
  if (format === 'Slack') {
    const subject = e.node ? `node ${e.node} (UpdatePolicy ${e.policy})` : `UpdatePolicy ${e.policy}`;
    return { text: `nuo: ${subject} ${HEADLINES[e.kind]}: ${e.message}` };
  }
  return {
    source: 'nuo',
    kind: e.kind,
    policy: e.policy,
    ...(e.node ? { node: e.node } : {}),
    message: e.message,
    time: e.at.toISOString(),
  };
}
