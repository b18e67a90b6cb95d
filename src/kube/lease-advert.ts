/**
 * What a leader tells the other candidates on its Lease (e.g. where its FleetLock server answers): an
 * annotation whose value names the holder that wrote it, so that one an earlier holder left is never
 * taken for the current holder's. Pure.
 */
import type { V1Lease } from '@kubernetes/client-node';

/** The annotation's value as the holder `identity` writes it. */
export const advertValue = (identity: string, value: string) => JSON.stringify({ holder: identity, value });

/** The current holder's value of `key` on the Lease; undefined when absent, malformed or another's. */
export function advertOf(lease: V1Lease | undefined, key: string): string | undefined {
  const text = lease?.metadata?.annotations?.[key];
  const holder = lease?.spec?.holderIdentity;
  if (text === undefined || !holder) return undefined;
  try {
    const parsed = JSON.parse(text) as { holder?: unknown; value?: unknown };
    return parsed.holder === holder && typeof parsed.value === 'string' ? parsed.value : undefined;
  } catch {
    return undefined;
  }
}
