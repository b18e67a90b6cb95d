/**
 * The reboot grant (`nuo.dev/reboot-ok`): a claim signed by the operator with an Ed25519 key only it can
 * read (Secret `nuo-grant-key`), verified by the agent with the public half (ConfigMap `nuo-grant-key`).
 * Anyone with rights to patch a Node can write the annotation; only the operator can write a value an
 * agent obeys. The claim names the node, its boot and the attempt that holds its slot in the ledger, so a
 * grant copied to another node, left over from an earlier boot or restored from a backup after its
 * attempt ended reboots nothing.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { attemptId } from './attempt.ts';

/** Secret (private key) and ConfigMap (public key) in the operator's namespace; the operator writes both. */
export const GRANT_KEY_NAME = 'nuo-grant-key';
/** Data key of the PEM in each. */
export const PRIVATE_KEY_FIELD = 'privateKey';
export const PUBLIC_KEY_FIELD = 'publicKey';

const VERSION = 'v1';
/** Longer than any grant signGrant writes: not parsed at all. */
const MAX_GRANT_LENGTH = 1024;

export interface GrantClaim {
  node: string;
  /** The node's boot ID when the grant was given: the grant is for a reboot out of this boot. */
  bootId: string;
  /** The attempt that holds the node's slot in the ledger (attempt.ts attemptId). */
  attempt: string;
}

export const GrantCheck = {
  /** Signed by the operator for this node and this boot. */
  valid: 'valid',
  /** Signed for this node, for an earlier boot: the node has rebooted since the grant. */
  otherBoot: 'other-boot',
  /** Not a grant the operator gave (malformed, another node's, bad signature, unknown key). */
  forged: 'forged',
} as const;
export type GrantCheck = (typeof GrantCheck)[keyof typeof GrantCheck];

export interface GrantVerdict {
  check: GrantCheck;
  /** Why a grant is not valid, for logs and Events. */
  why?: string;
}

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url');

/** `v1.<claim as base64url JSON>.<Ed25519 signature as base64url>`: under 300 bytes. */
export function signGrant(privateKey: KeyObject, claim: GrantClaim): string {
  const payload = b64(JSON.stringify({ node: claim.node, bootId: claim.bootId, attempt: claim.attempt }));
  const signature = sign(null, Buffer.from(`${VERSION}.${payload}`), privateKey);
  return `${VERSION}.${payload}.${b64(signature)}`;
}

/** Reads a grant's claim without checking it (for messages); undefined when it is not one. */
export function readClaim(value: string): GrantClaim | undefined {
  if (value.length > MAX_GRANT_LENGTH) return undefined;
  const [version, payload, signature, ...rest] = value.split('.');
  if (version !== VERSION || !payload || !signature || rest.length > 0) return undefined;
  try {
    const claim = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<GrantClaim>;
    if (
      typeof claim.node !== 'string' ||
      typeof claim.bootId !== 'string' ||
      typeof claim.attempt !== 'string'
    )
      return undefined;
    return { node: claim.node, bootId: claim.bootId, attempt: claim.attempt };
  } catch {
    return undefined;
  }
}

/**
 * The attempt that holds `node`'s slot in the ledger's JSON (its slot's, or its promise's for a slot
 * handed over and not yet recorded; attempt.ts attemptId), or undefined: the attempt a grant for the node
 * must name.
 */
export function attemptOf(ledgerJson: string | undefined, node: string): string | undefined {
  try {
    const ledger = JSON.parse(ledgerJson ?? '{}') as {
      slots?: Record<string, { since?: unknown; attempt?: unknown }>;
      next?: Record<string, { since?: unknown; attempt?: unknown }>;
    };
    const entry = ledger.slots?.[node] ?? ledger.next?.[node];
    if (typeof entry?.since !== 'string') return undefined;
    const attempt = Number.isSafeInteger(entry.attempt) ? (entry.attempt as number) : undefined;
    return attemptId({ since: entry.since, ...(attempt === undefined ? {} : { attempt }) });
  } catch {
    return undefined;
  }
}

/** Whether `value` is a grant the holder of `publicKey`'s private half gave this node, for this boot. */
export function verifyGrant(
  publicKey: KeyObject | undefined,
  value: string,
  expect: { node: string; bootId: string },
): GrantVerdict {
  const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
  const claim = readClaim(value);
  if (!claim) return { check: GrantCheck.forged, why: `"${shown}" is not a signed grant` };
  if (!publicKey) return { check: GrantCheck.forged, why: 'no grant key published yet: cannot verify' };
  const [version, payload, signature] = value.split('.') as [string, string, string];
  const ok = verify(
    null,
    Buffer.from(`${version}.${payload}`),
    publicKey,
    Buffer.from(signature, 'base64url'),
  );
  if (!ok) return { check: GrantCheck.forged, why: 'its signature is not the operator key' };
  if (claim.node !== expect.node)
    return { check: GrantCheck.forged, why: `it was given to node ${claim.node}, not ${expect.node}` };
  if (claim.bootId !== expect.bootId)
    return { check: GrantCheck.otherBoot, why: `it was given in boot ${claim.bootId}, not ${expect.bootId}` };
  return { check: GrantCheck.valid };
}

export interface GrantKeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** PEMs as stored: PKCS#8 private, SPKI public. */
  privatePem: string;
  publicPem: string;
}

export function generateGrantKey(): GrantKeyPair {
  const { privateKey } = generateKeyPairSync('ed25519');
  return fromPrivatePem(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
}

export function fromPrivatePem(privatePem: string): GrantKeyPair {
  const privateKey = createPrivateKey(privatePem);
  const publicKey = createPublicKey(privateKey);
  return {
    privateKey,
    publicKey,
    privatePem,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export function publicKeyFromPem(pem: string): KeyObject {
  return createPublicKey(pem);
}
