/**
 * A Plan's hash: what runs on a node, so that a change to any of it re-applies the Plan to every selected
 * node (the node label plan.nuo.dev/<plan> holds the hash it was applied at), and nothing else, so that a
 * change to scheduling (concurrency, nodeSelector, window, postComplete*, the Job's deadline, the channel
 * itself) re-applies nothing. sha224 in hex (56 characters, SUC's length: it fits a label value) over
 * canonical JSON (keys sorted, absent flags as false), so it is the same on every replica and restart.
 */
import { createHash } from 'node:crypto';
import type { PlanSpec } from '../api/plan.ts';

export interface HashInput {
  spec: PlanSpec;
  /** The resolved version (spec.version, or what the channel resolved). */
  version: string;
  /** The data of each Secret the Plan mounts, by name (undefined: missing); ignoreUpdates ones unread. */
  secrets: Readonly<Record<string, Readonly<Record<string, string>> | undefined>>;
}

export function planHash({ spec, version, secrets }: HashInput): string {
  const content = {
    version,
    serviceAccountName: spec.serviceAccountName,
    prepare: spec.prepare,
    upgrade: spec.upgrade,
    secrets: (spec.secrets ?? []).map((s) => ({
      spec: s,
      data: s.ignoreUpdates ? undefined : (secrets[s.name] ?? null),
    })),
    tolerations: spec.tolerations,
    cordon: spec.cordon ?? false,
    drain: spec.drain,
    reboot: spec.reboot ?? false,
    imagePullSecrets: spec.imagePullSecrets,
    priorityClassName: spec.priorityClassName,
    exclusive: spec.exclusive ?? false,
  };
  return createHash('sha224').update(canonicalJson(content)).digest('hex');
}

/** JSON with every object's keys sorted and undefined members left out. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
