/**
 * Checks the operator's grants on the agent's node: signed with the key the operator publishes
 * (ConfigMap `nuo-grant-key` in its namespace), for this node and boot, and for the attempt that holds
 * the node's slot in the ledger now (ConfigMap `nuo-slots`). The key is read once and again only when a
 * grant does not verify with it (the operator's key was replaced), at most every REFRESH_MS, so a forged
 * value written over and over is not a stream of reads; the ledger is read for each signed grant.
 */
import type { KeyObject } from 'node:crypto';
import {
  attemptOf,
  GRANT_KEY_NAME,
  GrantCheck,
  type GrantVerdict,
  PUBLIC_KEY_FIELD,
  publicKeyFromPem,
  readClaim,
  verifyGrant,
} from '../api/grant.ts';
import { LEDGER } from '../api/keys.ts';
import { LeanApiError, type LeanClient } from '../kube/lean-client.ts';

const REFRESH_MS = 5000;

/** Whether a `nuo.dev/reboot-ok` value is a grant the operator gave this node, in this boot and attempt. */
export interface GrantVerifier {
  verify(value: string, expect: { node: string; bootId: string }): Promise<GrantVerdict>;
}

export class OperatorGrants implements GrantVerifier {
  readonly #client: LeanClient;
  readonly #namespace: string;
  #key: KeyObject | undefined;
  /** performance.now() of the last read of the key; undefined before the first. */
  #readAt: number | undefined;
  #problem = '';

  constructor(client: LeanClient, namespace: string) {
    if (!namespace) throw new Error("agent: the operator's namespace is required to check its grants");
    this.#client = client;
    this.#namespace = namespace;
  }

  async verify(value: string, expect: { node: string; bootId: string }): Promise<GrantVerdict> {
    const verdict = await this.#signed(value, expect);
    if (verdict.check === GrantCheck.forged) return verdict;
    const claim = readClaim(value);
    const where = `ConfigMap ${this.#namespace}/${LEDGER.name}`;
    let attempt: string | undefined;
    try {
      const ledger = await this.#client.getConfigMap(this.#namespace, LEDGER.name);
      attempt = attemptOf(ledger.data?.[LEDGER.key], expect.node);
    } catch (err) {
      return {
        check: GrantCheck.forged,
        why: `cannot read the slot ledger (${where}): ${(err as Error).message}`,
      };
    }
    if (!claim || attempt !== claim.attempt)
      return {
        check: GrantCheck.forged,
        why: `it was given in attempt ${claim?.attempt}, and the ledger holds ${attempt === undefined ? 'no slot for this node' : `attempt ${attempt}`}`,
      };
    return verdict;
  }

  async #signed(value: string, expect: { node: string; bootId: string }): Promise<GrantVerdict> {
    const verdict = verifyGrant(this.#key, value, expect);
    if (verdict.check !== GrantCheck.forged) return verdict;
    if (this.#readAt === undefined || performance.now() - this.#readAt >= REFRESH_MS) {
      await this.#readKey();
      const again = verifyGrant(this.#key, value, expect);
      if (again.check !== GrantCheck.forged) return again;
      return this.#withProblem(again);
    }
    return this.#withProblem(verdict);
  }

  #withProblem(verdict: GrantVerdict): GrantVerdict {
    return this.#problem ? { ...verdict, why: `${verdict.why} (${this.#problem})` } : verdict;
  }

  async #readKey(): Promise<void> {
    this.#readAt = performance.now();
    const where = `ConfigMap ${this.#namespace}/${GRANT_KEY_NAME}`;
    try {
      const cm = await this.#client.getConfigMap(this.#namespace, GRANT_KEY_NAME);
      const pem = cm.data?.[PUBLIC_KEY_FIELD];
      if (!pem) throw new Error(`${where} has no ${PUBLIC_KEY_FIELD}`);
      this.#key = publicKeyFromPem(pem);
      this.#problem = '';
    } catch (err) {
      // A key read before stays in use: a failed read is no reason to distrust it.
      this.#problem =
        err instanceof LeanApiError && err.status === 404
          ? `${where} does not exist: is the operator running in ${this.#namespace}?`
          : `reading ${where}: ${(err as Error).message}`;
    }
  }
}
