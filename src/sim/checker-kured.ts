/**
 * kured's lock as the checker reads it, on its own: the nodes its live holders name, from the annotation
 * on kured's DaemonSet in either of kured 1.23's forms (one holder, or `{"maxOwners","locks":[…]}`).
 * A holder whose TTL (nanoseconds, 0 for none) has run out since `created` holds nothing.
 */

/** Where kured keeps its lock (its flags' defaults): the checker watches that DaemonSet. */
export interface KuredLockRef {
  namespace: string;
  name: string;
  annotation: string;
}

export const KURED_DEFAULT_LOCK: KuredLockRef = {
  namespace: 'kube-system',
  name: 'kured',
  annotation: 'weave.works/kured-node-lock',
};

interface Holder {
  nodeID?: unknown;
  created?: unknown;
  TTL?: unknown;
}

export function kuredHolders(value: string | undefined, now: number): Set<string> {
  if (!value) return new Set();
  let parsed: { locks?: unknown } & Holder;
  try {
    parsed = JSON.parse(value);
  } catch {
    return new Set();
  }
  const holders: Holder[] = Array.isArray(parsed?.locks) ? parsed.locks : parsed?.nodeID ? [parsed] : [];
  const live = (h: Holder) =>
    !(typeof h.TTL === 'number' && h.TTL > 0 && now - Date.parse(String(h.created)) >= h.TTL / 1e6);
  return new Set(holders.filter(live).flatMap((h) => (typeof h.nodeID === 'string' ? [h.nodeID] : [])));
}
