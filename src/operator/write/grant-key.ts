/**
 * The operator's grant key (src/api/grant.ts): the private half in Secret `nuo-grant-key`, readable only
 * by the operator, and the public half in ConfigMap `nuo-grant-key`, which agents read. Created by the
 * first replica that leads; every replica after it reads the same Secret, so a new leader's grants verify
 * with the key agents already hold.
 */
import type { CoreV1Api, V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { attemptId } from '../../api/attempt.ts';
import {
  fromPrivatePem,
  GRANT_KEY_NAME,
  GrantCheck,
  type GrantKeyPair,
  generateGrantKey,
  PRIVATE_KEY_FIELD,
  PUBLIC_KEY_FIELD,
  signGrant,
  verifyGrant,
} from '../../api/grant.ts';
import { Annotations } from '../../api/keys.ts';
import { describeError, statusCode } from '../../kube/errors.ts';
import type { Ledger } from '../decide/ledger-view.ts';
import type { NodeView } from '../decide/node-view.ts';

const LABELS = { 'app.kubernetes.io/name': 'nuo' };

/** Reads the key, creating it if there is none yet, and publishes its public half. */
async function ensureGrantKey(core: CoreV1Api, namespace: string): Promise<GrantKeyPair> {
  const key = await readOrCreateSecret(core, namespace);
  await publish(core, namespace, key.publicPem);
  return key;
}

async function readOrCreateSecret(core: CoreV1Api, namespace: string): Promise<GrantKeyPair> {
  const where = `Secret ${namespace}/${GRANT_KEY_NAME}`;
  let secret: V1Secret | undefined;
  try {
    secret = await core.readNamespacedSecret({ name: GRANT_KEY_NAME, namespace });
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
  }
  if (!secret) {
    const fresh = generateGrantKey();
    try {
      await core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: GRANT_KEY_NAME, labels: LABELS },
          type: 'Opaque',
          stringData: { [PRIVATE_KEY_FIELD]: fresh.privatePem },
        },
      });
      return fresh;
    } catch (err) {
      // Another replica created it first: use theirs, so both sign with one key.
      if (statusCode(err) !== 409) throw err;
      secret = await core.readNamespacedSecret({ name: GRANT_KEY_NAME, namespace });
    }
  }
  const pem = secret.data?.[PRIVATE_KEY_FIELD];
  if (!pem) throw new Error(`${where} has no ${PRIVATE_KEY_FIELD}: delete it and nuo makes a new key`);
  try {
    return fromPrivatePem(Buffer.from(pem, 'base64').toString('utf8'));
  } catch (err) {
    throw new Error(
      `${where} does not hold a private key (${(err as Error).message}): delete it and nuo makes a new key`,
    );
  }
}

/** The public half in the ConfigMap, written only when it differs (a new key, or someone changed it). */
async function publish(core: CoreV1Api, namespace: string, publicPem: string): Promise<void> {
  const body: V1ConfigMap = {
    metadata: { name: GRANT_KEY_NAME, labels: LABELS },
    data: { [PUBLIC_KEY_FIELD]: publicPem },
  };
  let current: V1ConfigMap | undefined;
  try {
    current = await core.readNamespacedConfigMap({ name: GRANT_KEY_NAME, namespace });
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
  }
  if (current?.data?.[PUBLIC_KEY_FIELD] === publicPem) return;
  if (!current) {
    await core.createNamespacedConfigMap({ namespace, body }).catch((err: unknown) => {
      if (statusCode(err) !== 409) throw err;
    });
    return;
  }
  await core.replaceNamespacedConfigMap({
    name: GRANT_KEY_NAME,
    namespace,
    body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } },
  });
}

/**
 * Signs grants with the operator's key, read (or created) once per leadership: a failed read is tried
 * again at the next grant.
 */
export class GrantSigner {
  readonly #core: CoreV1Api;
  readonly #namespace: string;
  #key: Promise<GrantKeyPair> | undefined;
  /** The key once read: grants are checked with it synchronously, in decide(). */
  #loaded: GrantKeyPair | undefined;

  constructor(core: CoreV1Api, namespace: string) {
    this.#core = core;
    this.#namespace = namespace;
  }

  /** Reads the key afresh (a new leadership): a replica that cannot read or create it says so at once. */
  prepare(): Promise<GrantKeyPair> {
    this.#key = undefined;
    return this.#signingKey();
  }

  /**
   * The grant for a drained node's reboot out of its current boot, for the attempt that holds its slot
   * in `ledger`: the agent checks that attempt against the ledger it reads. No slot, no grant.
   */
  async grant(view: NodeView, ledger: Ledger): Promise<string> {
    const entry = ledger.slots[view.name] ?? ledger.next?.[view.name];
    if (!entry) throw new Error(`node ${view.name} holds no slot in the ledger: no grant`);
    const attempt = attemptId(entry);
    const key = await this.#signingKey();
    return signGrant(key.privateKey, { node: view.name, bootId: view.bootId, attempt });
  }

  /**
   * Whether `view`'s grant is one this key signed for the node's current boot; true while the key is not
   * read yet (nothing to check with: the agent still verifies every grant before it reboots).
   */
  signed = (view: NodeView): boolean => {
    const value = view.annotations[Annotations.rebootOk];
    if (value === undefined || !this.#loaded) return true;
    return (
      verifyGrant(this.#loaded.publicKey, value, { node: view.name, bootId: view.bootId }).check !==
      GrantCheck.forged
    );
  };

  #signingKey(): Promise<GrantKeyPair> {
    this.#key ??= ensureGrantKey(this.#core, this.#namespace)
      .then((key) => {
        this.#loaded = key;
        return key;
      })
      .catch((err: unknown) => {
        this.#key = undefined;
        throw new Error(`cannot sign a reboot grant: the grant key: ${describeError(err)}`);
      });
    return this.#key;
  }
}
