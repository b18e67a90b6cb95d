/**
 * kube-apiserver audit logging for the local cluster: who sent which request, as the API server saw it
 * (the only count a client cannot get wrong about itself). Events are JSON lines at Metadata level.
 */
import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

export interface AuditOptions {
  /**
   * Users whose requests are logged, e.g. `system:serviceaccount:nuo-system:nuo-operator`; every
   * request when omitted (costly on a busy cluster: KWOK's heartbeats alone are hundreds a second).
   */
  users?: string[];
}

/** The audit.k8s.io/v1 Policy: Metadata level for the given users (or all), nothing for others. */
export function auditPolicy(options: AuditOptions): object {
  const rules: object[] = [
    options.users ? { level: 'Metadata', users: options.users } : { level: 'Metadata' },
  ];
  if (options.users) rules.push({ level: 'None' });
  // RequestReceived would log each request twice; a watch still logs ResponseStarted when it opens.
  return { apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'], rules };
}

/** The fields of an audit.k8s.io/v1 Event a benchmark or test reads. */
export interface AuditEvent {
  auditID: string;
  stage: 'ResponseStarted' | 'ResponseComplete' | 'Panic';
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  userAgent?: string;
  objectRef?: {
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
  };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

/**
 * The requests in an audit log, one event per request (a watch logs ResponseStarted when it opens and
 * ResponseComplete when it ends; the first is kept), optionally only those of `user`.
 */
export async function readAuditLog(path: string, user?: string): Promise<AuditEvent[]> {
  if (!existsSync(path)) return [];
  const seen = new Set<string>();
  const events: AuditEvent[] = [];
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let e: AuditEvent;
    try {
      e = JSON.parse(line) as AuditEvent;
    } catch {
      continue; // the last line may be half written
    }
    if (user !== undefined && e.user?.username !== user) continue;
    if (seen.has(e.auditID)) continue;
    seen.add(e.auditID);
    events.push(e);
  }
  return events;
}
